//! @file phases.hpp  Where a collective's schedule is: named phases that an observer (the fusion
//! engine's timeline) records, and nothing at all when no one observes.
#pragma once
#include <chrono>
#include <string_view>
#include <vector>

namespace tutti::algorithm {

//! The phases one collective went through, in order: a schedule calls `context::phase("NAME")`
//! where a phase begins (a phase ends where the next begins, the last where the collective
//! returns). Names must be string literals, in capitals like the
//! timeline's other spans (they are shown as written): only the view is kept. Pipelined schedules
//! alternate (ring: REDUCE_SCATTER, ALLGATHER, REDUCE_SCATTER, ... once per round), so a long collective
//! records a few marks per pipelining round; the log's storage is reused across collectives.
struct phase_log {
  struct mark {
    std::string_view name;
    std::chrono::steady_clock::time_point at;
  };
  std::vector<mark> marks;

  void clear() noexcept { marks.clear(); }
  void begin(std::string_view name) { marks.push_back({name, std::chrono::steady_clock::now()}); }
};

}  // namespace tutti::algorithm
