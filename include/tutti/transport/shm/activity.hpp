//! @file activity.hpp  transport::shm's activity board (transport/activity_board.hpp): in the segments.
//!
//! Each rank writes its record into its own segment's activity area and reads the others' from
//! their segments, which every rank has mapped: no message, no lock. A seqlock guards each record
//! (the writer makes `version` odd, writes, makes it even; a reader retries while it is odd or
//! changed). The job's verdict lives in rank 0's segment: whoever turns its state from 0 to 1
//! writes it, and the others wait (bounded) for state 2.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/transport/activity_board.hpp"
#include "tutti/transport/shm/startup.hpp"

namespace tutti::transport::shm_detail {

//! Text into words[1..] with its length in words[0] (relaxed stores: the caller fences).
template <std::size_t N>
void store_text(std::atomic<std::uint64_t> (&words)[N], std::string_view text) {
  const std::size_t n = std::min(text.size(), (N - 1) * 8);
  words[0].store(n, std::memory_order_relaxed);
  for (std::size_t w = 0; w * 8 < n; ++w) {
    std::uint64_t v = 0;
    std::memcpy(&v, text.data() + w * 8, std::min<std::size_t>(8, n - w * 8));
    words[w + 1].store(v, std::memory_order_relaxed);
  }
}
template <std::size_t N>
std::string load_text(const std::atomic<std::uint64_t> (&words)[N]) {
  const std::size_t n = std::min<std::size_t>(words[0].load(std::memory_order_relaxed), (N - 1) * 8);
  std::string out(n, '\0');
  for (std::size_t w = 0; w * 8 < n; ++w) {
    const std::uint64_t v = words[w + 1].load(std::memory_order_relaxed);
    std::memcpy(out.data() + w * 8, &v, std::min<std::size_t>(8, n - w * 8));
  }
  return out;
}

class activity_board final : public transport::activity_board {
 public:
  explicit activity_board(mapped_job& job) : job_(&job) {}

  void post(std::string_view record) override {
    segment_header* h = job_->header(job_->rank);
    if (!h) return;
    auto& a = h->activity;
    const auto v = a.version.load(std::memory_order_relaxed);
    a.version.store(v + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    store_text(a.word, record);
    a.version.store(v + 2, std::memory_order_release);
  }

  std::vector<std::string> read_all(deadline until) override {
    std::vector<std::string> out(static_cast<std::size_t>(job_->world));
    for (int r = 0; r < job_->world; ++r) {
      const segment_header* h = job_->header(r);
      if (!h) continue;
      const auto& a = h->activity;
      for (;;) {  // a writer holds the record for a few hundred nanoseconds; a stopped one forever
        const auto before = a.version.load(std::memory_order_acquire);
        std::string text = load_text(a.word);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (before % 2 == 0 && a.version.load(std::memory_order_relaxed) == before) {
          out[static_cast<std::size_t>(r)] = std::move(text);
          break;
        }
        if (until.passed()) break;  // stopped mid-write: its record stays unknown
        std::this_thread::yield();
      }
    }
    return out;
  }

  std::string decide(const std::string& verdict, deadline until) override {
    verdict_area& v = area();
    std::uint32_t none = 0;
    if (v.state.compare_exchange_strong(none, 1, std::memory_order_acq_rel)) {
      store_text(v.word, cut_verdict(verdict));
      v.state.store(2, std::memory_order_release);
      return load_text(v.word);
    }
    while (v.state.load(std::memory_order_acquire) != 2) {
      if (until.passed()) return verdict;  // the writer stopped between its two stores
      std::this_thread::yield();
    }
    return load_text(v.word);
  }

  std::optional<std::string> verdict(deadline until) override {
    verdict_area& v = area();
    if (v.state.load(std::memory_order_acquire) == 0) return std::nullopt;
    while (v.state.load(std::memory_order_acquire) != 2) {
      if (until.passed()) return std::nullopt;
      std::this_thread::yield();
    }
    return load_text(v.word);
  }

 private:
  [[nodiscard]] verdict_area& area() const {
    segment_header* h = job_->header(0);
    if (!h) throw transport_error(rank_text(job_->job_rank(job_->rank)) + ": transport::shm has no segments mapped");
    return h->verdict;
  }

  mapped_job* job_;
};

}  // namespace tutti::transport::shm_detail
