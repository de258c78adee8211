//! @file start.hpp  Starting a communicator's fusion engine: settings, their cross-rank check, the tuner.
//!
//! The communicator calls start() once, after a barrier (so every rank is at the same point among
//! its blocking collectives); the ranks then compare their TUTTI_FUSION_THRESHOLD, TUTTI_CYCLE_TIME
//! and TUTTI_AUTOTUNE straight over the transport (core/tags.hpp: engine_start) before any engine
//! runs, and a disagreement is a tutti::mismatch naming the variable on every rank.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tutti/core/config.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/tags.hpp"
#include "tutti/fusion/joint.hpp"
#include "tutti/fusion/settings.hpp"
#include "tutti/fusion/timeline.hpp"
#include "tutti/fusion/autotune_interface.hpp"
#include "tutti/transport/exchange.hpp"

namespace tutti::fusion {

//! The strategy's parameters with the TUTTI_* overrides. `crosses_link`: the transport may carry
//! the engine's collectives over a network, where copying beside them pays (TUTTI_FUSION_OVERLAP's
//! default; on one host's memory the copies would take the cores the collective needs).
template <class Strategy>
engine_settings settings_from_env(std::chrono::nanoseconds stall_timeout, std::chrono::nanoseconds timeout,
                                  bool crosses_link = false) {
  engine_settings s;
  s.initial.threshold_bytes = config::bytes("TUTTI_FUSION_THRESHOLD", Strategy::threshold_bytes, 0, std::size_t{1} << 30);
  s.initial.cycle_time = config::milliseconds("TUTTI_CYCLE_TIME", Strategy::cycle_time, std::chrono::seconds(10));
  s.stall_timeout = stall_timeout;
  s.timeout = timeout;
  s.autotune = config::flag("TUTTI_AUTOTUNE", Strategy::autotune);
  s.overlap_copies = config::flag("TUTTI_FUSION_OVERLAP", crosses_link);  // this rank's own: not compared
  return s;
}

//! Every rank's settings to every rank; throws mismatch naming the first variable that differs.
template <class Transport>
void agree_on_settings(Transport& t, const engine_settings& settings, deadline until) {
  const std::array<std::uint64_t, 3> mine{settings.initial.threshold_bytes,
                                          static_cast<std::uint64_t>(settings.initial.cycle_time.count()),
                                          settings.autotune ? 1u : 0u};
  std::vector<std::array<std::uint64_t, 3>> all(static_cast<std::size_t>(t.world_size()));
  all[static_cast<std::size_t>(t.rank())] = mine;
  std::vector<typename Transport::request> requests;
  transport::exchange_with_all(t, tags::engine_start, std::span(all), until, requests);
  static constexpr const char* variables[] = {"TUTTI_FUSION_THRESHOLD (bytes)", "TUTTI_CYCLE_TIME (microseconds)",
                                              "TUTTI_AUTOTUNE"};
  for (std::size_t v = 0; v < mine.size(); ++v)
    for (std::size_t r = 1; r < all.size(); ++r)
      if (all[r][v] != all[0][v])
        throw mismatch(on_rank(t.rank()) + "starting the fusion engine: " + variables[v] +
                       " differs across ranks: rank 0 has " + std::to_string(all[0][v]) + ", " +
                       rank_text(static_cast<int>(r)) + " has " + std::to_string(all[r][v]));
}

//! Rank 0's tuner when TUTTI_AUTOTUNE is on (null elsewhere); refused for a strategy without one.
//! `choices`: the candidates it may choose among for the engine's collectives (joint.hpp), given to
//! a strategy whose make_tuner takes them.
template <class Strategy>
std::unique_ptr<tuner> make_tuner(const engine_settings& settings, int rank, std::string_view codec,
                                  std::string_view algorithm, const std::vector<algorithm_choice>& choices = {}) {
  if (!settings.autotune) return nullptr;
  if constexpr (requires { Strategy::make_tuner(settings.initial, codec, algorithm, choices); }) {
    return rank == 0 ? Strategy::make_tuner(settings.initial, codec, algorithm, choices) : nullptr;
  } else if constexpr (requires { Strategy::make_tuner(settings.initial, codec, algorithm); }) {
    return rank == 0 ? Strategy::make_tuner(settings.initial, codec, algorithm) : nullptr;
  } else {
    throw invalid_argument(on_rank(rank) + "TUTTI_AUTOTUNE=1 needs the fusion::autotuned strategy "
                           "(tutti/fusion/autotuned.hpp, with Eigen); this communicator's is fusion::" +
                           std::string(Strategy::name));
  }
}

//! Checks the settings across ranks, makes the engine over `port`, and says so at info.
template <class Engine, class Strategy, class Port>
std::unique_ptr<Engine> start(Port port, const engine_settings& settings, std::string_view codec,
                              std::string_view algorithm, std::unique_ptr<timeline> timeline) {
  const int rank = port.rank();
  agree_on_settings(port.transport(), settings, deadline::after(settings.timeout));
  auto tuner = make_tuner<Strategy>(settings, rank, codec, algorithm, algorithm_choices(port));
  auto engine = std::make_unique<Engine>(port, settings, std::move(tuner), std::move(timeline));
  log(log_level::info, rank,
      "fusion engine started: threshold " + std::to_string(settings.initial.threshold_bytes) + " bytes, cycle " +
          std::to_string(settings.initial.cycle_time.count()) + " us, autotune " + (settings.autotune ? "on" : "off"));
  return engine;
}

//! Holds a communicator's fusion engine. The engine's thread refers to its communicator, so a
//! communicator whose engine runs cannot move; moving one whose engine has not started is fine.
template <class Engine>
struct engine_slot {
  std::unique_ptr<Engine> engine;
  engine_slot() = default;
  engine_slot(engine_slot&& o) : engine(checked(std::move(o))) {}
  engine_slot& operator=(engine_slot&& o) {
    if (engine) throw invalid_argument("tutti::communicator: cannot be assigned to while its fusion engine runs");
    engine = checked(std::move(o));
    return *this;
  }
  ~engine_slot() { engine.reset(); }  // stops and joins the thread before the members it uses go

 private:
  static std::unique_ptr<Engine> checked(engine_slot&& o) {
    if (o.engine)
      throw invalid_argument("tutti::communicator: cannot be moved while its fusion engine runs (allreduce_async "
                             "started it); keep the communicator where it is, or move it before the first call");
    return nullptr;
  }
};

}  // namespace tutti::fusion
