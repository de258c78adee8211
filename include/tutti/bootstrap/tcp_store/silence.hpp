//! @file silence.hpp  A store server that stopped answering is not asked again at once by callers
//! that only have a moment to spare.
//!
//! Failure paths call the store with short deadlines of their own (the stall verdict, the job's
//! first loss, leaving: transport/first_loss.hpp's failure_store_wait). When the server is there but
//! does not answer (its process stopped, its host unreachable), each such call waited out its own
//! deadline, one after another: with rank 0 stopped, the other ranks ended 12-19 s after the fault
//! where TUTTI_TIMEOUT was 6 (docs/reliability.md). So once the server has left a call unanswered,
//! later calls whose own deadline is short (at most `short_call`) fail at once, for `cool_down`,
//! naming that silence; calls with longer deadlines (the job's own rendezvous and barriers) always
//! try, and any answer ends the silence. The first short call after the cool-down tries again.
#pragma once
#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include "tutti/core/deadline.hpp"

namespace tutti::bootstrap::tcp_detail {

class server_silence {
 public:
  static constexpr std::chrono::seconds short_call{5};
  static constexpr std::chrono::seconds cool_down{5};

  //! Why a call with deadline `until` should not wait on the server (it was silent less than
  //! cool_down ago: "it left a call unanswered N ms ago (<that call's error>)"), or nothing.
  [[nodiscard]] std::optional<std::string> refusal(deadline until) const {
    std::lock_guard lock(mutex_);
    if (!since_) return std::nullopt;
    const auto now = deadline::clock::now();
    if (now - *since_ >= cool_down || until.at() - now > short_call) return std::nullopt;
    const auto ago = std::chrono::duration_cast<std::chrono::milliseconds>(now - *since_).count();
    return "it left a call unanswered " + std::to_string(ago) + " ms ago (" + why_ + ")";
  }

  //! The server left a call unanswered (`why`: that call's error).
  void heard_nothing(const std::string& why) {
    std::lock_guard lock(mutex_);
    since_ = deadline::clock::now();
    why_ = why;
  }

  //! The server answered a call.
  void answered() {
    std::lock_guard lock(mutex_);
    since_.reset();
  }

 private:
  mutable std::mutex mutex_;
  std::optional<deadline::clock::time_point> since_;
  std::string why_;
};

}  // namespace tutti::bootstrap::tcp_detail
