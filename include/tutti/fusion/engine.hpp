//! @file engine.hpp  The fusion engine: one background thread per communicator serving allreduce_async.
//!
//! The thread owns the transport while it runs. It works in rounds: let tensors accumulate for the
//! cycle time, negotiate (negotiation.hpp) so every rank learns which tensors are ready everywhere
//! and in which batches, then run one collective per batch through the communicator's own allreduce
//! (so codecs and algorithms apply to fused buffers unchanged), unpack, and complete the handles.
//! A blocking collective called beside it (comm.allreduce, comm.barrier, ...) asks the engine for a
//! turn; the turn is granted in the round in which every rank has asked, so all ranks run it at the
//! same point among the fused collectives, and the transport is the caller's until it returns.
//! Parameters change only between rounds, when no collective is in flight: the fusion buffer is
//! resized only by this thread, between its own collectives (horovod#1282 resized it under one).
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tutti/codec/concepts.hpp"
#include "tutti/codec/error_feedback.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/tensor_view.hpp"
#include "tutti/fusion/buffer.hpp"
#include "tutti/fusion/handle.hpp"
#include "tutti/fusion/negotiation.hpp"
#include "tutti/algorithm/phases.hpp"
#include "tutti/fusion/timeline.hpp"
#include "tutti/fusion/autotune_interface.hpp"

namespace tutti::fusion {


//! How an engine is set up; the communicator fills it from the strategy and TUTTI_* variables.
struct engine_settings {
  parameters initial;
  std::chrono::nanoseconds stall_timeout = std::chrono::seconds(60);  //!< TUTTI_STALL_TIMEOUT
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);       //!< each round's deadline
  std::chrono::microseconds idle_cycle{2000};  //!< the pace of rounds while no rank has work
  bool autotune = false;                       //!< TUTTI_AUTOTUNE: a tuner may change `initial`
};

template <class Comm>
class engine {
  using transport_type = typename Comm::transport_type;
  using request = typename transport_type::request;
  static constexpr bool feedback = feedback_codec_policy<typename Comm::codec_type>;
  static constexpr bool lossless = Comm::codec_type::lossless;

 public:
  engine(Comm& comm, engine_settings settings, std::unique_ptr<tuner> tuner, std::unique_ptr<timeline> timeline)
      : comm_(comm),
        settings_(settings),
        params_(settings.initial),
        tuner_(std::move(tuner)),
        timeline_(std::move(timeline)),
        rank_(comm.rank()),
        world_(comm.size()) {
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
    auto state = std::make_shared<completion>(name, std::move(cb));
    {
      std::lock_guard lock(mutex_);
      if (dead_) std::rethrow_exception(prefixed(dead_, "rank " + std::to_string(rank_) + ": allreduce_async '" + name + "': "));
      if (!in_use_.insert(name).second)
        throw invalid_argument("rank " + std::to_string(rank_) + ": allreduce_async '" + name +
                               "': a tensor of this name is already pending on this rank (wait on its handle first)");
      incoming_.push_back(std::make_shared<entry>(entry{std::move(name), in, out, {in.type, o, in.count},
                                                        clock::now(), state}));
    }
    return handle(std::move(state));
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

  //! Error-feedback codecs: this rank's residual per tensor name (what its codec has not sent yet),
  //! for checkpoints. Safe beside the engine's thread; consistent when no tensor is pending.
  [[nodiscard]] std::map<std::string, std::vector<float>> feedback_state() const {
    std::lock_guard lock(feedback_mutex_);
    std::map<std::string, std::vector<float>> out;
    for (const auto& [name, fb] : feedback_) out[name] = fb.residual();
    return out;
  }
  void restore_feedback(const std::map<std::string, std::vector<float>>& state) {
    std::lock_guard lock(feedback_mutex_);
    for (const auto& [name, residual] : state) {
      auto& fb = feedback_[name];
      fb.reset();
      if (!residual.empty())
        std::memcpy(fb.residual_for(residual.size(), "fusion engine: "), residual.data(), residual.size() * sizeof(float));
    }
  }

 private:
  struct entry {
    std::string name;
    const_tensor_view in;
    tensor_view out;
    tensor_meta meta;
    clock::time_point enqueued;
    std::shared_ptr<completion> state;
    clock::time_point ready{};
  };

  void run() {
    thread_id_.store(std::this_thread::get_id());
    std::exception_ptr failure;
    try {
      loop();
    } catch (const error& e) {
      failure = std::current_exception();
      comm_.engine_failed(e.what());
    } catch (const std::exception& e) {
      failure = std::make_exception_ptr(transport_error("rank " + std::to_string(rank_) + ": fusion engine: " + e.what()));
      comm_.engine_failed(e.what());
    }
    // Nothing more will run: fail whatever is still waiting, so no handle is left hanging.
    std::vector<std::shared_ptr<entry>> left;
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
      if (failure) dead_ = failure;
      else dead_ = std::make_exception_ptr(error("rank " + std::to_string(rank_) + ": the fusion engine has stopped" +
                                                 (stop_reason_.empty() ? std::string() : ": " + stop_reason_)));
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
        throw peer_lost(answer.lost, "rank " + std::to_string(rank_) + ": fusion engine: rank " +
                                         std::to_string(answer.lost) + " was lost (rank 0, the coordinator, saw it go)");
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
        std::lock_guard lock(mutex_);
        stop_reason_ = "a rank's communicator was destroyed";
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
    auto& t = comm_.transport();
    if (world_ == 1) return decide({mine});
    if (rank_ != 0) {
      const auto bytes = encode(mine);
      send_message(t, 0, tags::negotiation_request, bytes, until);
      return decode_response(recv_message(t, 0, tags::negotiation_answer, until));
    }
    std::vector<report> all(static_cast<std::size_t>(world_));
    all[0] = mine;
    std::vector<std::uint64_t> lengths(static_cast<std::size_t>(world_));
    std::vector<std::vector<std::byte>> bodies(static_cast<std::size_t>(world_));
    try {
      std::vector<request> reqs;
      for (int r = 1; r < world_; ++r) reqs.push_back(t.recv(r, tags::negotiation_request, &lengths[static_cast<std::size_t>(r)], 8));
      for (auto& q : reqs) t.wait(q, until);
      reqs.clear();
      for (int r = 1; r < world_; ++r) {
        auto& b = bodies[static_cast<std::size_t>(r)];
        b.resize(lengths[static_cast<std::size_t>(r)]);
        reqs.push_back(t.recv(r, tags::negotiation_request, b.data(), b.size()));
      }
      for (auto& q : reqs) t.wait(q, until);
    } catch (const peer_lost& e) {
      tell_lost(e.peer());  // so the others blame the rank that died, not this one when it aborts
      throw;
    }
    std::vector<request> reqs;
    for (int r = 1; r < world_; ++r) all[static_cast<std::size_t>(r)] = decode_report(bodies[static_cast<std::size_t>(r)]);
    response answer = decide(all);
    const auto bytes = encode(answer);
    const std::uint64_t length = bytes.size();
    for (int r = 1; r < world_; ++r) {
      reqs.push_back(t.send(r, tags::negotiation_answer, &length, 8));
      reqs.push_back(t.send(r, tags::negotiation_answer, bytes.data(), bytes.size()));
    }
    for (auto& q : reqs) t.wait(q, until);
    return answer;
  }

  //! Rank 0 lost `peer` while gathering reports: the others are waiting for its response, so it
  //! tells them who was lost (best effort, briefly) before it aborts.
  void tell_lost(int peer) noexcept {
    try {
      response last;
      last.stop = true;
      last.lost = peer;
      const auto bytes = encode(last);
      const std::uint64_t length = bytes.size();
      const auto until = deadline::after(std::chrono::seconds(2));
      auto& t = comm_.transport();
      std::vector<request> reqs;
      for (int r = 1; r < world_; ++r) {
        if (r == peer) continue;
        reqs.push_back(t.send(r, tags::negotiation_answer, &length, 8));
        reqs.push_back(t.send(r, tags::negotiation_answer, bytes.data(), bytes.size()));
      }
      for (auto& q : reqs) t.wait(q, until);
    } catch (...) {
    }
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
        timeline_->instant(a.name, "rank " + std::to_string(a.rank) + " ready", a.at);
    return answer;
  }

  template <class T>
  static void send_message(T& t, int peer, std::uint64_t tag, const std::vector<std::byte>& bytes, deadline until) {
    const std::uint64_t length = bytes.size();
    auto a = t.send(peer, tag, &length, 8);
    auto b = t.send(peer, tag, bytes.data(), bytes.size());
    t.wait(a, until);
    t.wait(b, until);
  }
  template <class T>
  static std::vector<std::byte> recv_message(T& t, int peer, std::uint64_t tag, deadline until) {
    std::uint64_t length = 0;
    auto a = t.recv(peer, tag, &length, 8);
    t.wait(a, until);
    if (length > (std::uint64_t{1} << 32)) throw transport_error("fusion negotiation: a message claims " + std::to_string(length) + " bytes");
    std::vector<std::byte> bytes(length);
    auto b = t.recv(peer, tag, bytes.data(), bytes.size());
    t.wait(b, until);
    return bytes;
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
      const std::string text = "rank " + std::to_string(rank_) + ": allreduce_async '" + f.name + "': " + f.message;
      std::exception_ptr ex;
      if (f.kind == failure_kind::mismatch) ex = std::make_exception_ptr(mismatch(text));
      else if (f.kind == failure_kind::stalled) ex = std::make_exception_ptr(timeout(text));
      else ex = std::make_exception_ptr(error(text));
      finish(*e, ex);
    }
    if (timeline_ && !answer.batches.empty())
      timeline_->span("engine", "NEGOTIATE", start, negotiated,
                      "\"batches\":" + std::to_string(answer.batches.size()));
    for (const auto& ids : answer.batches) run_batch(ids, negotiated, bytes, tensors);
  }

  void run_batch(const std::vector<std::uint32_t>& ids, clock::time_point negotiated, std::size_t& bytes,
                 std::size_t& tensors) {
    std::vector<std::shared_ptr<entry>> batch;
    batch.reserve(ids.size());
    for (auto id : ids) {
      const auto& name = cache_.at(id).name;
      auto it = pending_.find(name);
      if (it == pending_.end())
        throw transport_error("fusion negotiation: tensor '" + name + "' was declared ready but is not pending here");
      batch.push_back(std::move(it->second));
      pending_.erase(it);
    }
    const auto o = batch.front()->meta.reduction;
    const auto t = batch.front()->meta.type;
    const auto began = clock::now();
    std::unique_lock feedback_lock(feedback_mutex_, std::defer_lock);
    if constexpr (feedback) feedback_lock.lock();  // residuals are read and written by this batch
    std::exception_ptr failed;
    clock::time_point packed = began, reduced = began;
    std::size_t batch_bytes = 0;
    try {
      if (batch.size() == 1) {
        // One tensor: reduce it where it lies; a copy would only cost two passes over memory.
        auto& e = *batch.front();
        reduce(e.in, e.out, o, feedback_for(e), e.name);
        packed = began;
        reduced = clock::now();
        batch_bytes = e.meta.bytes();
      } else {
        views_in_.clear();
        for (auto& e : batch) views_in_.push_back(e->in);
        buffer_.pack(views_in_);
        packed = clock::now();
        // Without a codec an average is a sum whose division is fused into the unpack (one pass
        // fewer, the same bits as op::avg); a lossy codec averages inside its schedule.
        const bool divide_on_unpack = lossless && o == op::avg;
        error_feedback* fb = nullptr;
        if constexpr (feedback) fb = pack_feedback(batch);
        reduce(const_tensor_view(buffer_.view()), buffer_.view(), divide_on_unpack ? op::sum : o, fb,
               std::to_string(batch.size()) + " tensors");
        reduced = clock::now();
        if constexpr (feedback) unpack_feedback(batch);
        views_out_.clear();
        for (auto& e : batch) views_out_.push_back(e->out);
        buffer_.unpack(views_out_, 1.0, divide_on_unpack ? world_ : 1);
        batch_bytes = buffer_.bytes();
      }
    } catch (const mismatch&) {
      failed = std::current_exception();  // the same verdict on every rank: the engine goes on
    } catch (const invalid_argument&) {
      failed = std::current_exception();
    } catch (...) {
      // The job is broken (a peer lost, a deadline passed): these tensors fail with it, then the
      // engine stops and fails the rest.
      for (auto& e : batch) finish(*e, prefixed(std::current_exception(), handle_prefix(*e)));
      throw;
    }
    const auto unpacked = clock::now();
    if (timeline_) {
      const std::string args = "\"tensors\":" + std::to_string(batch.size()) + ",\"bytes\":" +
                               std::to_string(batch_bytes) + ",\"dtype\":\"" + std::string(name_of(t)) + "\"";
      timeline_->span("engine", batch.size() == 1 ? "ALLREDUCE" : "FUSED_ALLREDUCE", began, unpacked, args);
      // The collective by phase (ring: REDUCE_SCATTER / ALLGATHER per pipelining round), nested
      // inside the span above.
      const auto& marks = phases_.marks;
      for (std::size_t i = 0; i < marks.size(); ++i) {
        const auto end = i + 1 < marks.size() ? marks[i + 1].at : reduced;
        if (end >= marks[i].at) timeline_->span("engine", marks[i].name, marks[i].at, end);
      }
      for (auto& e : batch) {
        timeline_->span(e->name, "NEGOTIATE", e->enqueued, negotiated);
        timeline_->span(e->name, "WAIT_FOR_BATCH", negotiated, began);
        if (packed > began) timeline_->span(e->name, "PACK", began, packed, args);
        timeline_->span(e->name, "ALLREDUCE", packed, reduced, args);
        if (unpacked > reduced && batch.size() > 1) timeline_->span(e->name, "UNPACK", reduced, unpacked);
      }
    }
    for (auto& e : batch) {
      if (!failed) {
        bytes += e->meta.bytes();
        ++tensors;
      }
      finish(*e, failed);
    }
  }

  void reduce(const_tensor_view in, tensor_view out, op o, error_feedback* fb, const std::string& what) {
    phases_.clear();
    struct tracing {  // the communicator records this collective's phases only while it runs
      Comm& comm;
      ~tracing() { comm.trace_phases(nullptr); }
    } scope{comm_};
    comm_.trace_phases(timeline_ ? &phases_ : nullptr);
    comm_.fused_allreduce(in, out, o, fb, what);
  }

  error_feedback* feedback_for(entry& e) {
    if constexpr (feedback) return &feedback_[e.name];
    else return nullptr;
  }

  //! A fused buffer's residual: each tensor's own (zeros the first time) at its offset.
  error_feedback* pack_feedback(const std::vector<std::shared_ptr<entry>>& batch) {
    fused_feedback_ = error_feedback();
    float* fused = fused_feedback_.residual_for(buffer_.elements(), "fusion engine: ");
    for (std::size_t i = 0; i < batch.size(); ++i) {
      auto& mine = feedback_[batch[i]->name];
      if (mine.residual().size() == batch[i]->meta.count)
        std::memcpy(fused + buffer_.offset(i), mine.residual().data(), batch[i]->meta.count * sizeof(float));
    }
    return &fused_feedback_;
  }
  void unpack_feedback(const std::vector<std::shared_ptr<entry>>& batch) {
    const float* fused = fused_feedback_.residual().data();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      auto& mine = feedback_[batch[i]->name];
      if (!mine.residual().empty() && mine.residual().size() != batch[i]->meta.count) mine.reset();
      float* r = mine.residual_for(batch[i]->meta.count, "fusion engine: ");
      std::memcpy(r, fused + buffer_.offset(i), batch[i]->meta.count * sizeof(float));
    }
  }

  void grant(std::uint64_t grant_to) {
    blocking_granted_seen_ = std::max(blocking_granted_seen_, grant_to);
    std::unique_lock lock(mutex_);
    while (blocking_granted_ < grant_to) {
      ++blocking_granted_;
      turn_.notify_all();
      // The caller runs its collective now; the transport is its until leave_blocking().
      turn_.wait(lock, [&] { return blocking_done_ >= blocking_granted_ || blocking_abandoned_; });
      if (blocking_abandoned_) throw timeout("rank " + std::to_string(rank_) + ": fusion engine: a blocking collective gave up waiting for its turn");
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

  Comm& comm_;
  engine_settings settings_;
  parameters params_;                       //!< guarded by mutex_ (read by current_parameters())
  std::optional<parameters> next_params_;   //!< rank 0: the tuner's choice for the next response
  std::unique_ptr<tuner> tuner_;
  std::unique_ptr<timeline> timeline_;
  algorithm::phase_log phases_;  //!< the current collective's phases, when the timeline records
  std::unique_ptr<coordinator> coordinator_;
  int rank_, world_;

  // Shared with callers, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_, turn_;
  std::vector<std::shared_ptr<entry>> incoming_;
  std::unordered_set<std::string> in_use_;
  std::uint64_t blocking_requested_ = 0, blocking_granted_ = 0, blocking_done_ = 0;
  bool blocking_abandoned_ = false, stop_requested_ = false, stopped_ = false;
  std::exception_ptr dead_;
  std::string stop_reason_;

  // The engine thread's own.
  std::unordered_map<std::string, std::shared_ptr<entry>> pending_;
  tensor_cache cache_;
  fusion_buffer buffer_;
  std::vector<const_tensor_view> views_in_;
  std::vector<tensor_view> views_out_;
  std::unordered_map<std::string, error_feedback> feedback_;  //!< under feedback_mutex_
  mutable std::mutex feedback_mutex_;
  error_feedback fused_feedback_;
  std::uint64_t blocking_granted_seen_ = 0;
  std::atomic<std::uint64_t> rounds_{0};
  std::atomic<std::thread::id> thread_id_{};
  std::thread thread_;
};

}  // namespace tutti::fusion
