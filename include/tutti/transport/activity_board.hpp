//! @file activity_board.hpp  Where a job's ranks post what they are doing, for the stall inspector.
//!
//! Each rank's communicator posts one short record about itself about once a second
//! (communicator/stall_inspector.hpp says what is in it); a rank that waits too long reads every
//! rank's record to say who is missing, and at its deadline the first rank to give up records its
//! diagnosis as the job's verdict, which every other rank then reads instead of forming its own
//! (so no two ranks blame different ranks). The board only stores bytes; it knows nothing of what
//! they mean.
//!
//! A transport offers a board by `activity_board()` returning one (shm: in its segments; multi_node:
//! in the job's store; inproc: in its fabric). A transport without one still gets the warning, from
//! its own rank's view only.
#pragma once
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tutti/bootstrap/store_calls.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/transport/first_loss.hpp"

namespace tutti::transport {

class activity_board {
 public:
  //! A record longer than this is cut (the shm board has this much room per rank).
  static constexpr std::size_t max_record = 440;
  //! A verdict longer than this is cut, with "..." at its end.
  static constexpr std::size_t max_verdict = 4000;

  virtual ~activity_board() = default;
  //! Replaces this rank's record.
  virtual void post(std::string_view record) = 0;
  //! Every rank's latest record, by rank; empty where a rank has posted none. Bounded by `until`
  //! (a store that does not answer throws tutti::error).
  [[nodiscard]] virtual std::vector<std::string> read_all(deadline until) = 0;
  //! Records `verdict` unless a rank recorded one first; returns the one recorded.
  virtual std::string decide(const std::string& verdict, deadline until) = 0;
  //! The verdict recorded, if a rank recorded one.
  [[nodiscard]] virtual std::optional<std::string> verdict(deadline until) = 0;

 protected:
  [[nodiscard]] static std::string_view cut(std::string_view s, std::size_t most) { return s.substr(0, most); }
  [[nodiscard]] static std::string cut_verdict(const std::string& v) {
    return v.size() <= max_verdict ? v : v.substr(0, max_verdict - 3) + "...";
  }
};

//! In one process (transport::inproc's threads): a vector under a mutex.
class local_activity_board {
 public:
  explicit local_activity_board(int world) : records_(static_cast<std::size_t>(world)) {}

  //! Rank `rank`'s view: the board it posts to as that rank.
  class view final : public activity_board {
   public:
    view(local_activity_board& b, int rank) : b_(&b), rank_(rank) {}
    void post(std::string_view record) override {
      std::lock_guard lock(b_->mutex_);
      b_->records_[static_cast<std::size_t>(rank_)] = cut(record, max_record);
    }
    std::vector<std::string> read_all(deadline) override {
      std::lock_guard lock(b_->mutex_);
      return b_->records_;
    }
    std::string decide(const std::string& verdict, deadline) override {
      std::lock_guard lock(b_->mutex_);
      if (!b_->verdict_) b_->verdict_ = cut_verdict(verdict);
      return *b_->verdict_;
    }
    std::optional<std::string> verdict(deadline) override {
      std::lock_guard lock(b_->mutex_);
      return b_->verdict_;
    }

   private:
    local_activity_board* b_;
    int rank_;
  };

 private:
  std::mutex mutex_;
  std::vector<std::string> records_;
  std::optional<std::string> verdict_;
};

//! In the job's store (multi_node): keys <scope>/<rank>, the verdict at <scope>/verdict, decided by
//! whoever adds 1 to <scope>/verdict/count first. Every call is bounded, as first_loss's are.
class store_activity_board final : public activity_board {
 public:
  store_activity_board(bootstrap::store_ops store, std::string scope, int rank, int world)
      : store_(std::move(store)), scope_(std::move(scope)), rank_(rank), world_(world) {}

  void post(std::string_view record) override {
    const auto r = cut(record, max_record);
    store_.set(key(rank_), bootstrap::store_bytes(r.begin(), r.end()), deadline::after(failure_store_wait));
  }
  //! A store that does not answer names its server: that rank stopped (or its host is out of
  //! reach) is then the likeliest stall, and nobody can read who else is missing.
  std::vector<std::string> read_all(deadline until) override {
    std::vector<std::string> out(static_cast<std::size_t>(world_));
    try {
      for (int r = 0; r < world_; ++r) {
        if (!store_.check(key(r), until)) continue;  // never posted: a get would wait for it
        const auto bytes = store_.get(key(r), until);
        out[static_cast<std::size_t>(r)].assign(bytes.begin(), bytes.end());
      }
    } catch (const timeout& e) {
      const int s = store_.server_rank;
      if (s < 0 || s == rank_) throw;
      throw timeout(silent_store_text(s) + ": " + e.what());
    }
    return out;
  }
  std::string decide(const std::string& verdict, deadline until) override {
    if (store_.add(scope_ + "/verdict/count", 1, until) == 1) {
      const auto v = cut_verdict(verdict);
      store_.set(scope_ + "/verdict", bootstrap::store_bytes(v.begin(), v.end()), until);
      return v;
    }
    const auto bytes = store_.get(scope_ + "/verdict", until);  // the first is writing it
    return {bytes.begin(), bytes.end()};
  }
  std::optional<std::string> verdict(deadline until) override {
    if (!store_.check(scope_ + "/verdict/count", until)) return std::nullopt;
    const auto bytes = store_.get(scope_ + "/verdict", until);
    return std::string(bytes.begin(), bytes.end());
  }

 private:
  [[nodiscard]] std::string key(int r) const { return scope_ + "/" + std::to_string(r); }

  bootstrap::store_ops store_;
  std::string scope_;
  int rank_, world_;
};

}  // namespace tutti::transport
