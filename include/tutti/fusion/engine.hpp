//! @file engine.hpp  The fusion engine: one background thread per communicator serving allreduce_async.
//!
//! The thread owns the transport while it runs. It works in rounds: let tensors accumulate for the
//! cycle time, negotiate (negotiation.hpp; its messages: channel.hpp) so every rank learns which tensors
//! are ready everywhere and in which batches, then run each batch (batching.hpp) through the port's
//! checked allreduce (port.hpp: so codecs and algorithms apply to fused buffers unchanged), and
//! complete the handles. This file is the thread and its turns.
//! A blocking collective called beside it (comm.allreduce, comm.barrier, ...) asks the engine for a
//! turn; the turn is granted in the round in which every rank has asked, so all ranks run it at the
//! same point among the fused collectives, and the transport is the caller's until it returns.
//! Parameters change only between rounds, when no collective is in flight.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/tensor_view.hpp"
#include "tutti/fusion/batching.hpp"
#include "tutti/fusion/channel.hpp"
#include "tutti/fusion/handle.hpp"
#include "tutti/fusion/joint.hpp"
#include "tutti/fusion/negotiation.hpp"
#include "tutti/fusion/port.hpp"
#include "tutti/fusion/settings.hpp"
#include "tutti/fusion/timeline.hpp"
#include "tutti/fusion/autotune_interface.hpp"

namespace tutti::fusion {

template <engine_port Port>
class engine {
 public:
  engine(Port port, engine_settings settings, std::unique_ptr<tuner> tuner, std::unique_ptr<timeline> timeline)
      : port_(port),
        channel_(port_.transport(), port_.size()),
        batcher_(settings.overlap_copies),
        settings_(settings),
        params_(settings.initial),
        tuner_(std::move(tuner)),
        timeline_(std::move(timeline)),
        rank_(port_.rank()),
        world_(port_.size()) {
    if (rank_ == 0) coordinator_ = std::make_unique<coordinator>(world_, settings.stall_timeout);
    thread_ = std::thread([this] { run(); });
  }

  //! Stops every rank's engine at the next round (pending tensors fail, naming this rank) and joins.
  ~engine() {
    {
      std::lock_guard lock(mutex_);
      stop_requested_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  //! Queues a tensor; the handle completes once every rank's copy is reduced (or failed).
  handle enqueue(std::string name, const_tensor_view in, tensor_view out, op o, completion::callback cb) {
    tensor_request one{std::move(name), in, out};
    return std::move(enqueue_group(std::span(&one, 1), o, std::move(cb)).front());
  }

  //! Queues the tensors together: all or none (a name already pending refuses the group), in one
  //! report, so every rank's copies become ready in one round and are batched in their order.
  std::vector<handle> enqueue_group(std::span<tensor_request> group, op o, const completion::callback& cb) {
    std::vector<handle> handles;
    if (group.empty()) return handles;
    std::lock_guard lock(mutex_);
    if (dead_) std::rethrow_exception(prefixed(dead_, on_rank(rank_) + "allreduce_async '" + group.front().name + "': "));
    std::unordered_set<std::string_view> names;
    for (const auto& t : group) {
      if (in_use_.count(t.name))
        throw invalid_argument(on_rank(rank_) + "allreduce_async '" + t.name +
                               "': a tensor of this name is already pending on this rank (wait on its handle first)");
      if (!names.insert(t.name).second)
        throw invalid_argument(on_rank(rank_) + "allreduce_async_group: the name '" + t.name + "' is in the group twice");
    }
    const auto now = clock::now();
    for (auto& t : group) {
      in_use_.emplace(t.name, now);
      auto state = std::make_shared<completion>(t.name, cb);
      incoming_.push_back(std::make_shared<entry>(entry{std::move(t.name), t.in, t.out, {t.in.type, o, t.in.count}, now, state}));
      handles.emplace_back(std::move(state));
    }
    return handles;
  }

  [[nodiscard]] bool on_engine_thread() const noexcept { return std::this_thread::get_id() == thread_id_.load(); }

  //! Called by a blocking collective on another thread: returns once every rank has entered it and
  //! the transport is this caller's (then `leave_blocking()` must follow), or false when the engine
  //! has stopped (the caller then runs on its own). Throws timeout at `until`.
  bool enter_blocking(deadline until, const std::string& where) {
    std::unique_lock lock(mutex_);
    if (stopped_ || dead_) return false;
    const auto mine = ++blocking_requested_;
    wake_.notify_all();
    if (!turn_.wait_until(lock, until.at(), [&] { return blocking_granted_ >= mine || stopped_ || dead_; })) {
      blocking_abandoned_ = true;
      turn_.notify_all();
      throw timeout(where + "not every rank entered this collective within TUTTI_TIMEOUT (it waited for its turn "
                            "beside the fusion engine's collectives)");
    }
    if (blocking_granted_ >= mine) return true;
    if (dead_) std::rethrow_exception(prefixed(dead_, where));  // named by the blocking call too
    return false;
  }
  void leave_blocking() {
    {
      std::lock_guard lock(mutex_);
      ++blocking_done_;
    }
    turn_.notify_all();
  }

  [[nodiscard]] parameters current_parameters() const {
    std::lock_guard lock(mutex_);
    return params_;
  }
  [[nodiscard]] std::uint64_t rounds() const noexcept { return rounds_.load(); }

  //! The tensor enqueued longest ago that has not completed, and when (for the stall inspector).
  [[nodiscard]] std::optional<std::pair<std::string, clock::time_point>> oldest_in_flight() const {
    std::lock_guard lock(mutex_);
    const auto it = std::min_element(in_use_.begin(), in_use_.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
    if (it == in_use_.end()) return std::nullopt;
    return *it;
  }

  //! Error-feedback codecs: this rank's residual per tensor name (batching.hpp).
  [[nodiscard]] std::map<std::string, std::vector<float>> feedback_state() const { return batcher_.feedback_state(); }
  void restore_feedback(const std::map<std::string, std::vector<float>>& state) { batcher_.restore_feedback(state); }

 private:
  void run() {
    thread_id_.store(std::this_thread::get_id());
    std::exception_ptr failure;
    try {
      loop();
    } catch (const error&) {
      failure = port_.engine_failed(std::current_exception());
    } catch (const std::exception& e) {
      failure = port_.engine_failed(std::make_exception_ptr(transport_error(on_rank(rank_, "fusion engine") + e.what())));
    }
    // Nothing more will run: fail whatever is still waiting, so no handle is left hanging.
    std::vector<std::shared_ptr<entry>> left;
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
      const std::string text =
          on_rank(rank_) + "the fusion engine has stopped" + (stop_reason_.empty() ? std::string() : ": " + stop_reason_);
      if (failure) dead_ = failure;
      // Stopped because another rank left while this one goes on: what it enqueues later is lost
      // to that rank (peer_lost naming it), as what it was waiting for when the report came.
      else if (left_by_ >= 0 && left_by_ != rank_ && !stop_requested_) dead_ = std::make_exception_ptr(peer_lost(left_by_, text));
      else dead_ = std::make_exception_ptr(error(text));
      for (auto& e : incoming_) left.push_back(e);
      incoming_.clear();
    }
    for (auto& [name, e] : pending_) left.push_back(e);
    pending_.clear();
    turn_.notify_all();
    for (auto& e : left) finish(*e, prefixed(failure ? failure : dead_, handle_prefix(*e)));
    if (timeline_) timeline_->flush();
  }

  void loop() {
    auto next_round = clock::now();
    bool idle = false;
    for (;;) {
      {
        // Let tensors accumulate for a cycle (longer while every rank is idle); a blocking
        // collective or a stop request cuts the wait short, a new tensor only ends an idle wait.
        std::unique_lock lock(mutex_);
        const auto pace = idle ? std::max(params_.cycle_time, settings_.idle_cycle) : params_.cycle_time;
        const auto granted = blocking_granted_;
        wake_.wait_until(lock, next_round + pace, [&] {
          return stop_requested_ || blocking_requested_ > granted || (idle && !incoming_.empty());
        });
      }
      const auto start = clock::now();
      next_round = start;
      report mine = take_report();
      response answer = negotiate(mine);
      if (answer.lost >= 0)
        throw peer_lost(answer.lost, on_rank(rank_, "fusion engine") + rank_text(answer.lost) + " was lost (rank 0, the coordinator, saw it go)");
      const auto negotiated = clock::now();
      rounds_.fetch_add(1);
      std::size_t bytes = 0, tensors = 0;
      apply(answer, start, negotiated, bytes, tensors);
      // Idle: nothing happened anywhere this round (a rank waiting for a late peer polls at the idle pace).
      idle = !answer.carries_work() && answer.grant_to <= blocking_granted_seen_;
      grant(answer.grant_to);
      if (rank_ == 0 && tuner_) {
        if (auto p = tuner_->observe(bytes, tensors, cache_.live_names(), clock::now())) next_params_ = *p;
      }
      if (answer.stop) {
        // A rank left (its communicator was destroyed). Where this rank still waits on the engine
        // (a tensor queued after the report, a blocking collective's turn) that rank is lost to
        // it: peer_lost naming it, not a stop naming nobody. A job ending together stops quietly.
        const int by = answer.stopped_by;
        std::lock_guard lock(mutex_);
        const bool waiting = !incoming_.empty() || blocking_requested_ > blocking_granted_;
        stop_reason_ = (by >= 0 ? rank_text(by) + "'s" : std::string("a rank's")) + " communicator was destroyed";
        left_by_ = by;
        if (by >= 0 && by != rank_ && !stop_requested_ && waiting)
          throw peer_lost(by, on_rank(rank_, "fusion engine") + rank_text(by) +
                                  " left the job (its communicator was destroyed) while this rank waited on the engine");
        return;
      }
    }
  }

  //! Moves newly enqueued tensors to pending and describes them for the coordinator.
  report take_report() {
    report r;
    std::vector<std::shared_ptr<entry>> fresh;
    {
      std::lock_guard lock(mutex_);
      fresh.swap(incoming_);
      r.blocking_requested = blocking_requested_;
      r.stopping = stop_requested_;
    }
    for (auto& e : fresh) {
      if (auto id = cache_.find(e->name, e->meta)) {
        if (r.cached.size() <= *id / 64) r.cached.resize(*id / 64 + 1, 0);
        r.cached[*id / 64] |= std::uint64_t{1} << (*id % 64);
      } else {
        r.fresh.emplace_back(e->name, e->meta);
      }
      pending_.emplace(e->name, std::move(e));
    }
    return r;
  }

  //! One round trip with the coordinator: every rank's report to rank 0, its response to all.
  response negotiate(const report& mine) {
    const auto until = deadline::after(settings_.timeout);
    if (world_ == 1) return decide({mine});
    if (rank_ != 0) return channel_.ask(mine, until);
    std::vector<report> all(static_cast<std::size_t>(world_));
    all[0] = mine;
    channel_.gather(all, until);
    response answer = decide(all);
    channel_.answer(answer, until);
    return answer;
  }

  response decide(const std::vector<report>& all) {
    {
      std::lock_guard lock(mutex_);
      if (next_params_) params_ = *next_params_;  // rank 0's params_ are what it sends
    }
    next_params_.reset();
    std::vector<coordinator::arrival> arrivals;
    auto answer = coordinator_->decide(all, cache_, params_, clock::now(), timeline_ ? &arrivals : nullptr);
    if (timeline_)
      for (const auto& a : arrivals)
        timeline_->instant(a.name, rank_text(a.rank) + " ready", a.at);
    return answer;
  }

  //! Applies a response: ids, failures, then the batches in order (the same on every rank).
  void apply(const response& answer, clock::time_point start, clock::time_point negotiated, std::size_t& bytes,
             std::size_t& tensors) {
    {
      std::lock_guard lock(mutex_);
      params_ = answer.params;
    }
    for (const auto& a : answer.assignments) cache_.assign(a);
    for (const auto& f : answer.failures) {
      auto it = pending_.find(f.name);
      if (it == pending_.end()) continue;  // a rank that never enqueued it has nothing to fail
      auto e = std::move(it->second);
      pending_.erase(it);
      const std::string text = on_rank(rank_) + "allreduce_async '" + f.name + "': " + f.message;
      std::exception_ptr ex;
      if (f.kind == failure_kind::mismatch) ex = std::make_exception_ptr(mismatch(text));
      else if (f.kind == failure_kind::stalled) ex = std::make_exception_ptr(timeout(text));
      else if (f.kind == failure_kind::stopped && answer.stopped_by >= 0 && answer.stopped_by != rank_)
        ex = std::make_exception_ptr(peer_lost(answer.stopped_by, text));  // that rank left the job
      else ex = std::make_exception_ptr(error(text));
      finish(*e, ex);
    }
    if (timeline_ && !answer.batches.empty())
      timeline_->span("engine", "NEGOTIATE", start, negotiated,
                      "\"batches\":" + std::to_string(answer.batches.size()));
    // Joint tuning: rank 0's algorithm choice runs this round's batches on every rank, and is
    // released before grant() gives a blocking collective its turn (joint.hpp).
    const forced_algorithm<Port> forced(port_, answer.batches.empty() ? 0 : answer.params.algorithm);
    run_batches(answer.batches, negotiated, bytes, tensors);
  }

  //! The response's batches, in its order, through the batcher; every handle completes (here or on
  //! the batcher's copy thread) before this returns or throws.
  void run_batches(const std::vector<std::vector<std::uint32_t>>& ids, clock::time_point negotiated,
                   std::size_t& bytes, std::size_t& tensors) {
    if (ids.empty()) return;
    // Every tensor must be pending before any leaves pending_: a broken response fails them all
    // (run()'s cleanup), none is lost between.
    std::unordered_set<std::string_view> named;
    std::vector<std::vector<typename decltype(pending_)::iterator>> found(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
      for (auto id : ids[i]) {
        const auto& name = cache_.at(id).name;
        const auto it = pending_.find(name);
        if (it == pending_.end() || !named.insert(name).second)
          throw transport_error("fusion negotiation: tensor '" + name +
                                "' was declared ready but is not pending here (or was declared twice)");
        found[i].push_back(it);
      }
    std::vector<batch> batches(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
      for (auto it : found[i]) {  // erasing one element leaves the other iterators valid
        batches[i].push_back(std::move(it->second));
        pending_.erase(it);
      }
    std::mutex counted;
    batcher_.run_round(port_, batches, negotiated, timeline_.get(), [&](std::size_t i, std::exception_ptr failed, bool broken) {
      if (!failed) {
        std::lock_guard lock(counted);
        for (const auto& e : batches[i]) bytes += e->meta.bytes();
        tensors += batches[i].size();
      }
      // The job's failure is about the job, not one tensor: each handle's copy names its call.
      for (auto& e : batches[i]) finish(*e, broken ? prefixed(failed, handle_prefix(*e)) : failed);
    });
  }

  void grant(std::uint64_t grant_to) {
    blocking_granted_seen_ = std::max(blocking_granted_seen_, grant_to);
    std::unique_lock lock(mutex_);
    while (blocking_granted_ < grant_to) {
      ++blocking_granted_;
      turn_.notify_all();
      // The caller runs its collective now; the transport is its until leave_blocking().
      turn_.wait(lock, [&] { return blocking_done_ >= blocking_granted_ || blocking_abandoned_; });
      if (blocking_abandoned_) throw timeout(on_rank(rank_, "fusion engine") + "a blocking collective gave up waiting for its turn");
    }
  }

  //! The failure of a whole batch or of the engine is about the job, not one tensor: each handle's
  //! copy says which call it broke (docs/errors.md: every message names the collective).
  [[nodiscard]] std::string handle_prefix(const entry& e) const {
    return on_rank(rank_) + "allreduce_async '" + e.name + "': ";
  }

  void finish(entry& e, std::exception_ptr error) {
    {
      std::lock_guard lock(mutex_);
      in_use_.erase(e.name);
    }
    e.state->complete(std::move(error), rank_);
  }

  Port port_;
  negotiation_channel<typename Port::transport_type> channel_;
  batcher<typename Port::codec_type> batcher_;
  engine_settings settings_;
  parameters params_;                       //!< guarded by mutex_ (read by current_parameters())
  std::optional<parameters> next_params_;   //!< rank 0: the tuner's choice for the next response
  std::unique_ptr<tuner> tuner_;
  std::unique_ptr<timeline> timeline_;
  std::unique_ptr<coordinator> coordinator_;
  int rank_, world_;

  // Shared with callers, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_, turn_;
  std::vector<std::shared_ptr<entry>> incoming_;
  std::unordered_map<std::string, clock::time_point> in_use_;  //!< enqueued, not yet completed
  std::uint64_t blocking_requested_ = 0, blocking_granted_ = 0, blocking_done_ = 0;
  bool blocking_abandoned_ = false, stop_requested_ = false, stopped_ = false;
  std::exception_ptr dead_;
  std::string stop_reason_;
  int left_by_ = -1;  //!< the rank whose leaving stopped the engine (-1: none, or not known)

  // The engine thread's own.
  std::unordered_map<std::string, std::shared_ptr<entry>> pending_;
  tensor_cache cache_;
  std::uint64_t blocking_granted_seen_ = 0;
  std::atomic<std::uint64_t> rounds_{0};
  std::atomic<std::thread::id> thread_id_{};
  std::thread thread_;
};

}  // namespace tutti::fusion
