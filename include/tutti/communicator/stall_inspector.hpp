//! @file stall_inspector.hpp  Which rank is stuck, and on what: a watchdog per communicator.
//!
//! The collective path marks each collective's entry and return in one word per thread (a relaxed
//! store each: nothing measurable beside a 0.3 µs allreduce). A watchdog thread reads the words
//! every period (TUTTI_STALL_WARN / 8, between 25 ms and 1 s), posts this rank's record to the
//! transport's activity board (transport/activity_board.hpp) whether or not it changed (so a
//! silent rank is a stopped one), and when this rank has waited in one collective longer than
//! TUTTI_STALL_WARN, reads every rank's record and logs one line: the collective, the ranks in
//! it, the ranks missing and what those were last seen doing (activity_record.hpp). It repeats
//! the line every TUTTI_STALL_WARN while the wait lasts. A tensor allreduce_async has held longer
//! than the smaller of TUTTI_STALL_WARN and half of TUTTI_STALL_TIMEOUT gets one line too.
//!
//! At TUTTI_TIMEOUT the communicator asks for the verdict: the first rank to time out writes its
//! diagnosis on the board, and every rank (those timing out later, and those that then see it
//! abort) fails with that one text, so no two ranks blame different ranks.
#pragma once
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tutti/communicator/activity_record.hpp"
#include "tutti/core/collective.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/tags.hpp"
#include "tutti/transport/activity_board.hpp"

namespace tutti::detail {

//! How every rank's error begins once the job stalled. Also where the job's store was silent
//! when a peer was seen lost (transport/first_loss.hpp): its server is stopped or out of reach,
//! a stall though nobody could decide it.
inline constexpr const char* stalled_prefix = "the job stalled: ";

//! The error's beginning once the job stalled: the verdict, then what this rank saw.
[[nodiscard]] inline std::string stalled_text(const std::string& verdict) {
  return stalled_prefix + verdict + "; here: ";
}

class stall_inspector {
 public:
  using clock = std::chrono::steady_clock;
  //! The oldest tensor in the fusion engine's hands and when it was enqueued (fusion::engine::oldest_in_flight).
  using tensor_source = std::function<std::optional<std::pair<std::string, clock::time_point>>()>;

  //! `board` may be null (the transport has none: the lines then speak for this rank only).
  stall_inspector(int rank, transport::activity_board* board, std::string transport_name,
                  std::chrono::nanoseconds warn, std::chrono::nanoseconds stall_timeout)
      : rank_(rank),
        board_(board),
        transport_name_(std::move(transport_name)),
        warn_ms_(std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(warn).count())),
        tensor_warn_ms_(std::max<std::int64_t>(
            1, std::min(warn_ms_, std::chrono::duration_cast<std::chrono::milliseconds>(stall_timeout).count() / 2))),
        period_ms_(std::clamp<std::int64_t>(warn_ms_ / 8, 25, 1000)),
        silent_after_ms_(std::max<std::int64_t>(4 * period_ms_, 1000)) {
    thread_ = std::thread([this] { loop(); });
    ::pthread_setname_np(thread_.native_handle(), "tutti-stall");
  }
  stall_inspector(const stall_inspector&) = delete;
  stall_inspector& operator=(const stall_inspector&) = delete;
  ~stall_inspector() { stop(); }

  //! The collective path: `d` entered (and left) on the calling thread, the engine's or another.
  void enter(const collective_descriptor& d) noexcept {
    view(d).word.store(packed(d, call_state::inside), std::memory_order_relaxed);
  }
  void leave(const collective_descriptor& d, bool failed) noexcept {
    view(d).word.store(packed(d, failed ? call_state::failed : call_state::returned), std::memory_order_relaxed);
  }

  //! Where the oldest tensor of allreduce_async comes from, once the engine runs.
  void watch_tensors(tensor_source source) {
    std::lock_guard lock(mutex_);
    tensors_ = std::move(source);
  }

  //! At `d`'s deadline: the job's verdict, written by the first rank to ask, read by the others.
  [[nodiscard]] std::string verdict(const collective_descriptor& d) {
    const std::uint64_t w = packed(d, call_state::inside);
    std::int64_t since = 0;  // unknown when the watchdog never saw this collective
    {
      std::lock_guard lock(mutex_);
      if (view(d).seen == w) since = view(d).since;
    }
    return decide(diagnosis(tags::is_fused(d.sequence), w, since));
  }

  //! At the fusion engine's deadline (its negotiation waited TUTTI_TIMEOUT): the job's verdict from
  //! the oldest tensor in flight, decided once like verdict(); nullopt when none is in flight.
  [[nodiscard]] std::optional<std::string> tensor_verdict() {
    std::optional<std::pair<std::string, clock::time_point>> oldest;
    {
      std::lock_guard lock(mutex_);
      if (tensors_) oldest = tensors_();
    }
    if (!oldest) return std::nullopt;
    const auto now = wall_ms();
    return decide(tensor_diagnosis(oldest->first, now - milliseconds_since(oldest->second), now));
  }

  //! The verdict, if a rank has written one (a rank that sees a peer abort asks before blaming it).
  [[nodiscard]] std::optional<std::string> decided() {
    if (!board_) return std::nullopt;
    try {
      return board_->verdict(deadline::after(std::chrono::milliseconds(500)));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  //! Stops the watchdog (the communicator does before its fusion engine goes); enter/leave stay safe.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      tensors_ = nullptr;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  //! One thread's collectives: the word the collective path stores, and what the watchdog saw of it.
  struct thread_view {
    std::atomic<std::uint64_t> word{0};  //!< pack_call, written by the collective path
    std::uint64_t seen = 0;              //!< the word as the watchdog last read it (under mutex_)
    std::int64_t since = 0;              //!< when it read it changed (under mutex_)
  };
  [[nodiscard]] thread_view& view(const collective_descriptor& d) noexcept {
    return views_[tags::is_fused(d.sequence) ? 1 : 0];
  }
  [[nodiscard]] static std::uint64_t packed(const collective_descriptor& d, call_state s) noexcept {
    return pack_call(tags::call_number(d.sequence), d.kind, s);
  }

  //! The job's verdict: `mine` if this rank is the first to decide, else the first rank's.
  [[nodiscard]] std::string decide(const std::string& mine) {
    if (!board_ || board_unreachable_.load()) return mine;  // just failed to read it: no second wait
    try {
      return board_->decide(mine, deadline::after(std::chrono::seconds(2)));
    } catch (const std::exception&) {
      return mine;  // the board is out of reach: this rank's own view
    }
  }
  [[nodiscard]] static std::int64_t milliseconds_since(clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - t).count();
  }

  //! Every rank's posts, or why there are none (`unknown`).
  [[nodiscard]] std::vector<std::string> posts(std::string& unknown) {
    if (!board_) {
      unknown = "the other ranks are not known here: transport " + transport_name_ + " has no activity board";
      return {};
    }
    try {
      auto all = board_->read_all(deadline::after(std::chrono::seconds(1)));
      board_unreachable_ = false;
      return all;
    } catch (const std::exception& e) {
      board_unreachable_ = true;
      unknown = std::string("the other ranks' records could not be read: ") + e.what();
      return {};
    }
  }

  //! This rank's diagnosis of `w` (entered at `since`; 0: unknown) from every rank's posts.
  [[nodiscard]] std::string diagnosis(bool fused, std::uint64_t w, std::int64_t since) {
    std::string unknown;
    const auto all = posts(unknown);
    const auto now = wall_ms();
    if (!since) since = now;
    if (all.empty()) return call_text(w, fused) + " has waited " + seconds_text(now - since) + " on " + rank_text(rank_) + "; " + unknown;
    return diagnose(rank_, fused, w, since, now, silent_after_ms_, all);
  }
  //! This rank's diagnosis of a tensor allreduce_async has held since `since`.
  [[nodiscard]] std::string tensor_diagnosis(const std::string& tensor, std::int64_t since, std::int64_t now) {
    std::string unknown;
    const auto all = posts(unknown);
    if (all.empty())
      return "tensor '" + tensor + "' (allreduce_async) waited " + seconds_text(now - since) + " on " + rank_text(rank_) + "; " + unknown;
    return diagnose_tensor(rank_, tensor, since, now, silent_after_ms_, all);
  }

  void loop() {
    std::unique_lock lock(mutex_);
    std::int64_t next_warn[2] = {0, 0};  // by views_ index
    std::string tensor_warned;
    while (!stopping_) {
      const auto now = wall_ms();
      for (int f = 0; f < 2; ++f) {
        thread_view& v = views_[f];
        const auto w = v.word.load(std::memory_order_relaxed);
        if (w != v.seen) v.seen = w, v.since = now, next_warn[f] = now + warn_ms_;
      }
      activity_record r;
      r.call = views_[0].seen, r.call_since = views_[0].since;
      r.fused = views_[1].seen, r.fused_since = views_[1].since;
      r.posted = now;
      const auto oldest = tensors_ ? tensors_() : std::nullopt;
      if (oldest) {
        r.tensor = oldest->first;
        r.tensor_since = now - milliseconds_since(oldest->second);
      }
      lock.unlock();
      if (board_) {
        try {
          board_->post(r.encode());
        } catch (const std::exception&) {
          // the store is out of reach; peers will see this rank as silent, which it is to them
        }
      }
      for (int f = 0; f < 2; ++f) {
        const std::uint64_t w = f ? r.fused : r.call;
        if (state_of(w) != call_state::inside || now < next_warn[f]) continue;
        log(log_level::warn, rank_, "stall: " + diagnosis(f == 1, w, f ? r.fused_since : r.call_since) + " (TUTTI_STALL_WARN)");
        next_warn[f] = now + warn_ms_;
      }
      if (oldest && now - r.tensor_since >= tensor_warn_ms_ && tensor_warned != r.tensor) {
        tensor_warned = r.tensor;
        log(log_level::warn, rank_,
            "stall: " + tensor_diagnosis(r.tensor, r.tensor_since, now) +
                " (TUTTI_STALL_WARN; TUTTI_STALL_TIMEOUT fails it naming the ranks that never enqueued it)");
      }
      lock.lock();
      wake_.wait_for(lock, std::chrono::milliseconds(period_ms_), [&] { return stopping_; });
    }
  }

  const int rank_;
  transport::activity_board* const board_;
  const std::string transport_name_;
  const std::int64_t warn_ms_, tensor_warn_ms_, period_ms_, silent_after_ms_;
  thread_view views_[2];  //!< [0] blocking collectives, [1] the fusion engine's
  std::atomic<bool> board_unreachable_{false};  //!< the last read of the board failed

  std::mutex mutex_;  //!< guards what follows, and views_[].seen and .since
  std::condition_variable wake_;
  bool stopping_ = false;
  tensor_source tensors_;
  std::thread thread_;
};

}  // namespace tutti::detail

namespace tutti::detail {

//! The communicator's inspector over `t` (null when TUTTI_STALL_WARN=0 turned it off).
template <class Transport>
[[nodiscard]] std::unique_ptr<stall_inspector> make_stall_inspector(Transport& t, std::chrono::nanoseconds warn,
                                                                    std::chrono::nanoseconds stall_timeout) {
  if (warn <= std::chrono::nanoseconds::zero()) return nullptr;
  transport::activity_board* board = nullptr;
  if constexpr (requires { { t.activity_board() } -> std::convertible_to<transport::activity_board&>; })
    board = &t.activity_board();
  std::string name = "?";
  if constexpr (requires { Transport::name; }) name = Transport::name;
  return std::make_unique<stall_inspector>(t.rank(), board, std::move(name), warn, stall_timeout);
}

//! Marks a collective entered for its scope, and returned or failed (left by an exception) after.
class watched_call {
 public:
  watched_call(stall_inspector* s, const collective_descriptor& d) noexcept
      : s_(s), d_(&d), exceptions_(std::uncaught_exceptions()) {
    if (s_) s_->enter(d);
  }
  ~watched_call() {
    if (s_) s_->leave(*d_, std::uncaught_exceptions() > exceptions_);
  }
  watched_call(const watched_call&) = delete;
  watched_call& operator=(const watched_call&) = delete;

 private:
  stall_inspector* s_;
  const collective_descriptor* d_;
  int exceptions_;
};

}  // namespace tutti::detail
