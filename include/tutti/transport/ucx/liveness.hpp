//! @file liveness.hpp  transport::ucx's peers: their endpoints, losing one, one leaving, and the
//! way out at shutdown.
//!
//! Loss: UCX calls the endpoint's error handler when a peer's connection breaks; the peer is then
//! marked lost, its endpoint force-closed (pending sends to it fail) and the receives posted for
//! it cancelled, so every wait involving it throws tutti::peer_lost at once rather than at the
//! deadline. abort() tears this rank's worker down, which peers see as exactly such a break.
//! Two holes, found by the fault campaign (a receive from a SIGKILLed rank waited out
//! TUTTI_TIMEOUT, once in 8 `kill` runs): a receive that had already matched its message (a
//! rendezvous under way) when the sender died cannot be cancelled and never completes; and UCX
//! may not notice a peer at all while its connection to this rank is idle (it learns at its next
//! send, or from its keepalive, 20 s and more later). So an operation that has waited
//! departure_poll fails with peer_lost if its peer was reported lost meanwhile, and asks the
//! store whether the job recorded a loss (first_loss.hpp's record, written by the first rank that
//! saw one): if so it fails with peer_lost naming that rank.
//!
//! Leaving: a rank whose transport is destroyed while the others still expect messages (it
//! returned from main or threw right after joining, say) is not a broken connection: its endpoints
//! close cleanly. So the destructor first flushes and closes the endpoints (bounded by
//! close_timeout), then announces `<prefix>/left/<rank>` in the store. A rank whose operation with
//! that peer has waited departure_poll checks for the announcement (then every departure_poll) and
//! fails it with peer_lost naming the rank that left, in about a second instead of at the deadline.
//!
//! Shutdown: after announcing, the destructor meets the other ranks in a store barrier
//! (`<prefix>/closed`, polled while progressing, bounded by the timeout) so that no rank destroys
//! its worker while a peer still flushes to it. A rank that aborted, saw a peer die or saw one
//! leave sets `<prefix>/abandoned` instead (at once, from abort()), which releases the others: the
//! rank that left is then gone within a second of being noticed. Store calls on these failure
//! paths are bounded by failure_store_wait (first_loss.hpp): the store may have died with rank 0.
#pragma once
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tutti/bootstrap/store_calls.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/log.hpp"
#include "tutti/transport/first_loss.hpp"
#include "tutti/transport/op_pool.hpp"
#include "tutti/transport/ucx/error.hpp"
#include "tutti/transport/ucx/operation.hpp"
#include "tutti/transport/ucx/startup.hpp"
#include "tutti/transport/ucx/worker.hpp"

namespace tutti::transport::ucx_detail {

//! How long an operation waits before the store is asked whether its peer left, and how often
//! after that: a wait that long is already slow, and a peer that left is named within a second.
inline constexpr std::chrono::milliseconds departure_poll{250};

class peer_watch {
 public:
  //! Binds the parts it works with; `w` may be built later (nothing here runs until connect()).
  peer_watch(job& j, op_pool<op_state>& ops, worker& w)
      : job_(j),
        ops_(ops),
        worker_(w),
        eps_(static_cast<std::size_t>(j.world), nullptr),
        slots_(std::make_unique<peer_slot[]>(static_cast<std::size_t>(j.world))),
        lost_(static_cast<std::size_t>(j.world), UCS_OK),
        loss_handled_(static_cast<std::size_t>(j.world), false),
        left_(static_cast<std::size_t>(j.world), false),
        stalled_(static_cast<std::size_t>(j.world), false) {}
  peer_watch(const peer_watch&) = delete;
  peer_watch& operator=(const peer_watch&) = delete;

  //! Creates the endpoint to `peer` from its worker address, with this watch's error handler.
  void connect(int peer, const bootstrap::store_bytes& address) {
    slots_[static_cast<std::size_t>(peer)] = peer_slot{this, peer};
    eps_[static_cast<std::size_t>(peer)] =
        worker_.connect(peer, address, &peer_watch::on_endpoint_error, &slots_[static_cast<std::size_t>(peer)]);
  }

  [[nodiscard]] ucp_ep_h endpoint(int peer) const noexcept { return eps_[static_cast<std::size_t>(peer)]; }
  //! UCS_OK while `peer` is fine, else why it was lost.
  [[nodiscard]] ucs_status_t lost(int peer) const noexcept { return lost_[static_cast<std::size_t>(peer)]; }
  //! Whether `peer` announced its departure while this rank waited for it.
  [[nodiscard]] bool left(int peer) const noexcept { return left_[static_cast<std::size_t>(peer)]; }
  //! A send to `peer` timed out: UCX cannot cancel it, so closing that endpoint forces it out.
  void stalled(int peer) noexcept { stalled_[static_cast<std::size_t>(peer)] = true; }

  //! After each ucp_worker_progress: acts on losses reported meanwhile, reaps finished closes.
  void after_progress() noexcept {
    if (losses_pending_) handle_losses();
    if (!closing_.empty()) reap_closes();
  }

  //! What is known of an operation that has waited departure_poll (asked at most every
  //! departure_poll): nothing; its peer was reported lost and the operation is still pending
  //! (a receive that had matched its message when the sender died: UCX cannot cancel it, and it
  //! never completes); its peer announced that it left (Leaving); or the job recorded a loss
  //! (Loss: recorded_loss() then says whose).
  enum class long_wait { nothing, peer_lost, peer_left, job_lost };
  long_wait check_long_wait(const op_state& op) {
    const auto now = std::chrono::steady_clock::now();
    if (now - op.posted < departure_poll || now < next_departure_check_ || op.peer == job_.rank)
      return long_wait::nothing;
    next_departure_check_ = now + departure_poll;
    if (lost(op.peer) != UCS_OK) return long_wait::peer_lost;
    if (store_failed_) return long_wait::nothing;
    try {
      if (job_.store.check(job_.key("lost/count"), deadline::after(failure_store_wait))) {
        recorded_loss_ = read_loss_record(job_.store.get(job_.key("lost"), deadline::after(2 * failure_store_wait)));
        return long_wait::job_lost;
      }
      return job_.store.check(job_.key("left/" + std::to_string(op.peer)), deadline::after(failure_store_wait))
                 ? long_wait::peer_left
                 : long_wait::nothing;
    } catch (const std::exception&) {
      // Out of reach for now (its process gone — UCX reports that loss itself — or the link
      // down for a while): ask again later, not never. Giving up for good made a job whose link
      // flapped for 1.5 s skip its shutdown barrier on one host, and the other host's ranks wait
      // TUTTI_TIMEOUT in theirs (the fault campaign's `flap`, tests/netns/faults.sh).
      next_departure_check_ = now + 4 * failure_store_wait;
      return long_wait::nothing;
    }
  }

  //! The loss the job recorded, once check_long_wait() said job_lost: the rank and how it was seen.
  [[nodiscard]] const std::pair<int, std::string>& recorded_loss() const noexcept { return recorded_loss_; }

  //! `op`'s peer left and what it sent has been delivered: it is lost from now on.
  void departed(const op_state& op) noexcept {
    log(log_level::info, job_.rank, "transport::ucx: rank " + std::to_string(op.peer) + " left the job while " +
                                        describe(job_.rank, op) + " waited for it");
    const auto p = static_cast<std::size_t>(op.peer);
    left_[p] = true;
    lost_[p] = UCS_ERR_CONNECTION_RESET;
    losses_pending_ = true;
    handle_losses();  // its receives cancelled, its endpoint forced closed: the op fails next progress
    abandon_job();
  }

  //! The job's first lost rank, for the communicator's error (communicator.hpp): see first_loss.hpp.
  [[nodiscard]] loss_account first_loss(int peer, const std::string& what) {
    auto account = transport::first_loss(job_.store, job_.key("lost"), job_.rank, peer, what);
    if (account.store != store_answer::answered) store_failed_ = true;
    return account;
  }

  //! abort(): releases ranks in their shutdown barrier, withdraws every receive, forces every
  //! endpoint closed (the caller destroys the worker next).
  void abort() noexcept {
    abandon_job();  // a rank waiting in its shutdown barrier (one that left) need not wait for us
    cancel_receives(-1);
    for (int p = 0; p < job_.world; ++p) close_endpoint(p, UCP_EP_CLOSE_FLAG_FORCE);
    free_closing();
  }

  //! Destructor, not aborted: withdraws leftover receives, lets every endpoint flush what is in
  //! flight (bounded by close_timeout) and closes it; endpoints with a timed-out send are forced.
  void close_gracefully() noexcept {
    cancel_receives(-1);
    for (int p = 0; p < job_.world; ++p)
      close_endpoint(p, stalled_[static_cast<std::size_t>(p)] ? UCP_EP_CLOSE_FLAG_FORCE : 0);
    const deadline until = deadline::after(job_.options.close_timeout);
    while (!closing_.empty() && !until.passed()) {
      worker_.progress();
      reap_closes();
    }
    if (!closing_.empty())
      log(log_level::warn, job_.rank,
          "transport::ucx: " + std::to_string(closing_.size()) +
              " endpoints did not finish flushing within TUTTI_UCX_CLOSE_TIMEOUT; destroying them anyway");
  }

  //! Announces this rank's departure (see the top of this file), then waits, polling the store
  //! and progressing UCX so that peers' flushes to us complete, until every rank has closed its
  //! endpoints, someone abandoned the job, a peer was lost, or the timeout passes.
  void shutdown_barrier() noexcept {
    if (job_.world == 1 || store_failed_) return;
    const std::string closed = job_.key("closed"), abandoned = job_.key("abandoned");
    if (job_.aborted || any_peer_lost()) return abandon_job();
    try {
      const deadline until = deadline::after(job_.options.timeout);
      job_.store.set(job_.key("left/" + std::to_string(job_.rank)), bootstrap::store_bytes{1}, until);
      job_.store.add(closed, 1, until);
      for (;;) {
        const std::int64_t seen = job_.store.add(closed, 0, until);
        if (seen >= job_.world || job_.store.check(abandoned, until)) return;
        if (until.passed()) {
          log(log_level::warn, job_.rank,
              "transport::ucx: shutdown barrier " + closed + " saw " + std::to_string(seen) + " of " +
                  std::to_string(job_.world) + " ranks before TUTTI_TIMEOUT; closing anyway");
          return;
        }
        const deadline slice = deadline::after(std::chrono::milliseconds(5));
        while (!slice.passed())
          if (worker_.progress() == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    } catch (const std::exception& e) {
      log(log_level::warn, job_.rank,
          std::string("transport::ucx: shutdown barrier through the store failed: ") + e.what());
    }
  }

  //! Lets go of endpoint close requests still in progress (UCX releases them when it completes them).
  void free_closing() noexcept {
    for (void* r : closing_) ucp_request_free(r);
    closing_.clear();
  }

 private:
  struct peer_slot {
    peer_watch* self = nullptr;
    int peer = -1;
  };

  //! UCX's endpoint error handler: runs inside ucp_worker_progress, so it only records the loss;
  //! after_progress() acts on it once UCX has returned.
  static void on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t status) noexcept {
    auto* slot = static_cast<peer_slot*>(arg);
    peer_watch& self = *slot->self;
    auto& lost = self.lost_[static_cast<std::size_t>(slot->peer)];
    if (lost != UCS_OK) return;
    lost = status == UCS_OK ? UCS_ERR_CONNECTION_RESET : status;
    self.losses_pending_ = true;
  }

  void handle_losses() noexcept {
    losses_pending_ = false;
    for (int p = 0; p < job_.world; ++p) {
      const auto i = static_cast<std::size_t>(p);
      if (lost_[i] == UCS_OK || loss_handled_[i]) continue;
      loss_handled_[i] = true;
      if (!left_[i])  // a departure was logged where it was found
        log(log_level::info, job_.rank,
            "transport::ucx: rank " + std::to_string(p) + " is lost: " + status_text(lost_[i]));
      cancel_receives(p);
      close_endpoint(p, UCP_EP_CLOSE_FLAG_FORCE);  // UCX requires a forced close of a failed endpoint
    }
  }

  //! Tells ranks waiting in their shutdown barrier that this job is over (best effort, bounded).
  void abandon_job() noexcept {
    if (abandoned_ || store_failed_ || job_.world == 1) return;
    abandoned_ = true;
    try {
      job_.store.set(job_.key("abandoned"), bootstrap::store_bytes{1}, deadline::after(failure_store_wait));
    } catch (const std::exception&) {
      store_failed_ = true;
    }
  }

  //! Cancels the pending receives from `peer` (every peer: -1); they fail with UCS_ERR_CANCELED.
  void cancel_receives(int peer) noexcept {
    ops_.for_each([&](op_state& op) {
      if (op.state == op_pending && !op.is_send && op.request && (peer < 0 || op.peer == peer))
        ucp_request_cancel(worker_.get(), op.request);
    });
  }

  void close_endpoint(int p, std::uint32_t flags) noexcept {
    ucp_ep_h ep = std::exchange(eps_[static_cast<std::size_t>(p)], nullptr);
    if (!ep) return;
    if (void* r = worker::close(ep, flags)) closing_.push_back(r);
  }

  void reap_closes() noexcept {
    std::erase_if(closing_, [](void* r) {
      if (ucp_request_check_status(r) == UCS_INPROGRESS) return false;
      ucp_request_free(r);
      return true;
    });
  }

  [[nodiscard]] bool any_peer_lost() const noexcept {
    for (auto s : lost_)
      if (s != UCS_OK) return true;
    return false;
  }

  job& job_;
  op_pool<op_state>& ops_;
  worker& worker_;
  std::vector<ucp_ep_h> eps_;                 //!< null once closed
  std::unique_ptr<peer_slot[]> slots_;        //!< error handlers' arguments: stable addresses
  std::vector<ucs_status_t> lost_;            //!< UCS_OK while the peer is fine, else why it was lost
  std::vector<bool> loss_handled_;
  std::vector<bool> left_;                    //!< announced its departure while we waited for it
  std::vector<bool> stalled_;                 //!< a send to this peer timed out: flushing would wait for it
  bool losses_pending_ = false;
  bool abandoned_ = false;                    //!< `<prefix>/abandoned` set (or tried) by this rank
  bool store_failed_ = false;                 //!< a store operation failed after a loss: skip the barrier
  std::chrono::steady_clock::time_point next_departure_check_{};
  std::pair<int, std::string> recorded_loss_{-1, {}};  //!< the job's loss record, once read
  std::vector<void*> closing_;                //!< endpoint close requests still in progress
};

}  // namespace tutti::transport::ucx_detail
