//! @file batching.hpp  One negotiated batch: pack the tensors, one allreduce through the port, unpack.
//!
//! A batch of one tensor is reduced where it lies (a copy would only cost two passes over memory);
//! a larger one is packed into the fusion buffer, reduced once, and unpacked. With an error-feedback
//! codec each tensor keeps its residual by name, packed and unpacked beside it. The fusion buffer
//! is resized only here, on the engine's thread, between its own collectives (horovod#1282 resized
//! it under one). The timeline, when it records, gets the batch's spans and the collective's phases.
#pragma once
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tutti/algorithm/phases.hpp"
#include "tutti/codec/concepts.hpp"
#include "tutti/codec/error_feedback.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/tensor_view.hpp"
#include "tutti/fusion/buffer.hpp"
#include "tutti/fusion/handle.hpp"
#include "tutti/fusion/negotiation.hpp"
#include "tutti/fusion/timeline.hpp"

namespace tutti::fusion {

//! A tensor enqueued by allreduce_async, from enqueue() until its handle completes.
struct entry {
  std::string name;
  const_tensor_view in;
  tensor_view out;
  tensor_meta meta;
  clock::time_point enqueued;
  std::shared_ptr<completion> state;
  clock::time_point ready{};
};

template <class Codec>
class batcher {
  static constexpr bool feedback = feedback_codec_policy<Codec>;
  static constexpr bool lossless = Codec::lossless;

 public:
  //! Reduces `batch` through `port` and records it on `timeline` (may be null). Returns the
  //! failure the tensors share when the ranks refused the call alike (mismatch, invalid argument:
  //! the engine goes on); any other error propagates (the job is broken).
  template <class Port>
  std::exception_ptr run(Port& port, const std::vector<std::shared_ptr<entry>>& batch, clock::time_point negotiated,
                         timeline* timeline) {
    const auto o = batch.front()->meta.reduction;
    const auto t = batch.front()->meta.type;
    const auto began = clock::now();
    std::unique_lock feedback_lock(feedback_mutex_, std::defer_lock);
    if constexpr (feedback) feedback_lock.lock();  // residuals are read and written by this batch
    std::exception_ptr failed;
    clock::time_point packed = began, reduced = began;
    std::size_t batch_bytes = 0;
    algorithm::phase_log* phases = timeline ? &phases_ : nullptr;
    try {
      if (batch.size() == 1) {
        auto& e = *batch.front();
        reduce(port, e.in, e.out, o, feedback_for(e), phases);
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
        reduce(port, const_tensor_view(buffer_.view()), buffer_.view(), divide_on_unpack ? op::sum : o, fb, phases);
        reduced = clock::now();
        if constexpr (feedback) unpack_feedback(batch);
        views_out_.clear();
        for (auto& e : batch) views_out_.push_back(e->out);
        buffer_.unpack(views_out_, 1.0, divide_on_unpack ? port.size() : 1);
        batch_bytes = buffer_.bytes();
      }
    } catch (const mismatch&) {
      failed = std::current_exception();  // the same verdict on every rank: the engine goes on
    } catch (const invalid_argument&) {
      failed = std::current_exception();
    }
    if (timeline) record(*timeline, batch, t, batch_bytes, negotiated, began, packed, reduced, clock::now());
    return failed;
  }

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
  template <class Port>
  void reduce(Port& port, const_tensor_view in, tensor_view out, op o, error_feedback* fb,
              algorithm::phase_log* phases) {
    phases_.clear();
    port.fused_allreduce(in, out, o, fb, phases);
  }

  void record(timeline& tl, const std::vector<std::shared_ptr<entry>>& batch, dtype t, std::size_t batch_bytes,
              clock::time_point negotiated, clock::time_point began, clock::time_point packed,
              clock::time_point reduced, clock::time_point unpacked) {
    const std::string args = "\"tensors\":" + std::to_string(batch.size()) + ",\"bytes\":" +
                             std::to_string(batch_bytes) + ",\"dtype\":\"" + std::string(name_of(t)) + "\"";
    tl.span("engine", batch.size() == 1 ? "ALLREDUCE" : "FUSED_ALLREDUCE", began, unpacked, args);
    // The collective by phase (ring: REDUCE_SCATTER / ALLGATHER per pipelining round), nested
    // inside the span above.
    const auto& marks = phases_.marks;
    for (std::size_t i = 0; i < marks.size(); ++i) {
      const auto end = i + 1 < marks.size() ? marks[i + 1].at : reduced;
      if (end >= marks[i].at) tl.span("engine", marks[i].name, marks[i].at, end);
    }
    for (auto& e : batch) {
      tl.span(e->name, "NEGOTIATE", e->enqueued, negotiated);
      tl.span(e->name, "WAIT_FOR_BATCH", negotiated, began);
      if (packed > began) tl.span(e->name, "PACK", began, packed, args);
      tl.span(e->name, "ALLREDUCE", packed, reduced, args);
      if (unpacked > reduced && batch.size() > 1) tl.span(e->name, "UNPACK", reduced, unpacked);
    }
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

  algorithm::phase_log phases_;  //!< the current collective's phases, when the timeline records
  fusion_buffer buffer_;
  std::vector<const_tensor_view> views_in_;
  std::vector<tensor_view> views_out_;
  std::unordered_map<std::string, error_feedback> feedback_;  //!< under feedback_mutex_
  mutable std::mutex feedback_mutex_;
  error_feedback fused_feedback_;
};

}  // namespace tutti::fusion
