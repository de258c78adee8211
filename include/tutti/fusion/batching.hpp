//! @file batching.hpp  A round's negotiated batches: pack the tensors, one allreduce each through the port, unpack.
//!
//! A batch of one tensor is reduced where it lies (a copy would only cost two passes over memory);
//! a larger one is packed into a fusion buffer, reduced once, and unpacked. With an error-feedback
//! codec each tensor keeps its residual by name, packed and unpacked beside it.
//!
//! Copies under the link: when a round has two or more fused batches, a copy thread
//! (`tutti-fusecopy`) packs batch k + 1 and unpacks batch k - 1 while the engine's thread runs
//! batch k's collective, so packing and unpacking cost no link time (issue 21: the replays' fused
//! steps lost 4-5 % to them). Two fusion buffers alternate; the copy thread's tasks run in the
//! order posted, so a buffer is packed again only after the batch that used it was unpacked, and
//! the collectives run in the negotiated order on every rank (nothing about them changes: the
//! copies are this rank's own). Error-feedback codecs keep the copies in turn (their residuals are
//! one map shared by the batches). TUTTI_FUSION_OVERLAP (default: on where the transport may cross
//! a network, off over one host's memory, where the copy thread would take the cores the
//! collective itself needs: measured 10-17 % slower there) turns the copy thread on or off.
//! A fusion buffer is resized only on the thread that packs it, never under its own collective
//! (horovod#1282 resized it under one). The timeline, when it records, gets the batch's spans and
//! the collective's phases.
#pragma once
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tutti/algorithm/phases.hpp"
#include "tutti/codec/concepts.hpp"
#include "tutti/codec/error_feedback.hpp"
#include "tutti/core/background_worker.hpp"
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

using batch = std::vector<std::shared_ptr<entry>>;

//! When one batch's steps ran (pack and unpack equal `began` / `reduced` where there was no copy).
struct batch_times {
  clock::time_point began, packed, reduce_began, reduced, unpack_began, unpacked;
};

template <class Codec>
class batcher {
  static constexpr bool feedback = feedback_codec_policy<Codec>;
  static constexpr bool lossless = Codec::lossless;

 public:
  //! Reports one batch's outcome, exactly once per batch, on the engine's thread or the copy
  //! thread: `failed` is null (outputs written), the failure the ranks share (mismatch, invalid
  //! argument: `broken` false, the engine goes on), or the job's (`broken`: a peer lost, a deadline
  //! passed; the outputs are not written).
  using done_fn = std::function<void(std::size_t batch, std::exception_ptr failed, bool broken)>;

  //! `overlap`: run the copies of a round's fused batches on the copy thread (TUTTI_FUSION_OVERLAP).
  explicit batcher(bool overlap = false) noexcept : overlap_(overlap && !feedback) {}

  //! Reduces a round's batches in their order through `port`, recording them on `timeline` (may be
  //! null), and reports each through `done`. Throws the job's failure once every batch is reported
  //! and no copy is running.
  template <class Port>
  void run_round(Port& port, const std::vector<batch>& batches, clock::time_point negotiated, timeline* timeline,
                 const done_fn& done) {
    std::vector<char> reported(batches.size(), 0);  // one element per batch: written by one thread each
    try {
      std::vector<std::size_t> fused;  // the batches that are packed, by index
      for (std::size_t i = 0; i < batches.size(); ++i)
        if (batches[i].size() > 1) fused.push_back(i);
      if (overlap_ && fused.size() >= 2) {
        overlapped(port, batches, fused, negotiated, timeline, done, reported);
      } else {
        for (std::size_t i = 0; i < batches.size(); ++i) {
          auto failed = in_turn(port, batches[i], negotiated, timeline);
          reported[i] = 1;
          done(i, failed, false);
        }
      }
    } catch (...) {
      copier_.reset();  // no copy touches a buffer or an output after this
      const auto broken = std::current_exception();
      for (std::size_t i = 0; i < batches.size(); ++i)
        if (!reported[i]) done(i, broken, true);
      throw;
    }
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
  //! One batch with every step on this thread (a single tensor: reduced where it lies).
  template <class Port>
  std::exception_ptr in_turn(Port& port, const batch& b, clock::time_point negotiated, timeline* tl) {
    const auto o = b.front()->meta.reduction;
    batch_times at;
    at.began = at.packed = at.reduce_began = at.reduced = at.unpack_began = at.unpacked = clock::now();
    std::unique_lock feedback_lock(feedback_mutex_, std::defer_lock);
    if constexpr (feedback) feedback_lock.lock();  // residuals are read and written by this batch
    fusion_buffer& buffer = buffers_[0];
    const std::exception_ptr failed = refused_alike([&] {
      if (b.size() == 1) {
        auto& e = *b.front();
        reduce(port, e.in, e.out, o, feedback_for(e), tl);
      } else {
        pack(buffer, b);
        at.packed = at.reduce_began = clock::now();
        error_feedback* fb = nullptr;
        if constexpr (feedback) fb = pack_feedback(buffer, b);
        reduce(port, const_tensor_view(buffer.view()), buffer.view(), divide_on_unpack(o) ? op::sum : o, fb, tl);
        at.reduced = at.unpack_began = clock::now();
        if constexpr (feedback) unpack_feedback(buffer, b);
        unpack(buffer, b, port.size());
      }
    });
    at.unpacked = clock::now();
    if (b.size() == 1 || failed) at.reduced = at.unpack_began = at.unpacked;
    if (tl) {
      const auto args = describe(b, b.size() == 1 ? b.front()->meta.bytes() : buffer.bytes());
      record_collective(*tl, b.size() == 1 ? "ALLREDUCE" : "FUSED_ALLREDUCE", args, at.began, at.unpacked, at.reduced);
      record_tensors(*tl, b, args, negotiated, at);
    }
    return failed;
  }

  //! A round with two or more fused batches: their packs and unpacks on the copy thread, two
  //! buffers alternating (the k-th fused batch uses buffers_[k % 2]); the collectives, and the
  //! single tensors, on this thread in the batches' order. The copy thread packs fused batch k + 1
  //! while this one reduces batch k, then unpacks batch k and completes it.
  template <class Port>
  void overlapped(Port& port, const std::vector<batch>& batches, const std::vector<std::size_t>& fused,
                  clock::time_point negotiated, timeline* tl, const done_fn& done, std::vector<char>& reported) {
    std::vector<batch_times> at(batches.size());
    std::vector<std::uint64_t> packed(batches.size(), 0);
    const auto post_pack = [&](std::size_t k) {
      if (k >= fused.size()) return;
      const std::size_t i = fused[k];
      packed[i] = copier_.post([this, &buffer = buffers_[k % 2], &b = batches[i], &t = at[i]] {
        t.began = clock::now();
        pack(buffer, b);
        t.packed = clock::now();
      });
    };
    // The copy thread's tasks refer to this frame's `at` and `packed`: drained before they go.
    const background_worker::drain_guard drained(copier_);
    post_pack(0);
    std::uint64_t last = 0;
    for (std::size_t i = 0, k = 0; i < batches.size(); ++i) {
      const batch& b = batches[i];
      if (b.size() == 1) {
        auto failed = in_turn(port, b, negotiated, tl);
        reported[i] = 1;
        done(i, failed, false);
        continue;
      }
      fusion_buffer& buffer = buffers_[k % 2];
      copier_.wait(packed[i]);  // packed; the copy thread's failure is the job's
      post_pack(++k);           // into the other buffer, after the unpack of the batch before
      const auto o = b.front()->meta.reduction;
      at[i].reduce_began = clock::now();
      const std::exception_ptr failed = refused_alike([&] {
        reduce(port, const_tensor_view(buffer.view()), buffer.view(), divide_on_unpack(o) ? op::sum : o, nullptr, tl);
      });
      at[i].reduced = clock::now();
      std::string args;
      if (tl) {
        args = describe(b, buffer.bytes());
        record_collective(*tl, "FUSED_ALLREDUCE", args, at[i].reduce_began, at[i].reduced, at[i].reduced);
      }
      last = copier_.post([this, &buffer, &b, &t = at[i], i, failed, world = port.size(), negotiated, tl,
                           args = std::move(args), &done, &reported] {
        t.unpack_began = t.unpacked = t.reduced;
        if (!failed) {
          t.unpack_began = clock::now();
          unpack(buffer, b, world);
          t.unpacked = clock::now();
        }
        if (tl) {
          tl->span("engine copies", "PACK", t.began, t.packed, args);
          if (!failed) tl->span("engine copies", "UNPACK", t.unpack_began, t.unpacked, args);
          record_tensors(*tl, b, args, negotiated, t);
        }
        reported[i] = 1;
        done(i, failed, false);
      });
    }
    copier_.wait(last);
  }

  //! Runs `step`; returns the failure the ranks share when they refused the call alike (mismatch,
  //! invalid argument: the same verdict on every rank, the engine goes on). Any other error is the
  //! job's and propagates.
  template <class F>
  static std::exception_ptr refused_alike(F&& step) {
    try {
      step();
    } catch (const mismatch&) {
      return std::current_exception();
    } catch (const invalid_argument&) {
      return std::current_exception();
    }
    return nullptr;
  }

  template <class Port>
  void reduce(Port& port, const_tensor_view in, tensor_view out, op o, error_feedback* fb, timeline* tl) {
    phases_.clear();
    port.fused_allreduce(in, out, o, fb, tl ? &phases_ : nullptr);
  }

  //! Without a codec an average is a sum whose division is fused into the unpack (one pass fewer,
  //! the same bits as op::avg); a lossy codec averages inside its schedule.
  [[nodiscard]] static constexpr bool divide_on_unpack(op o) noexcept { return lossless && o == op::avg; }

  void pack(fusion_buffer& buffer, const batch& b) {
    views_in_.clear();
    for (const auto& e : b) views_in_.push_back(e->in);
    buffer.pack(views_in_);
  }
  void unpack(const fusion_buffer& buffer, const batch& b, int world) {
    views_out_.clear();
    for (const auto& e : b) views_out_.push_back(e->out);
    buffer.unpack(views_out_, 1.0, divide_on_unpack(b.front()->meta.reduction) ? world : 1);
  }

  static std::string describe(const batch& b, std::size_t bytes) {
    return "\"tensors\":" + std::to_string(b.size()) + ",\"bytes\":" + std::to_string(bytes) + ",\"dtype\":\"" +
           std::string(name_of(b.front()->meta.type)) + "\"";
  }

  //! The collective on the engine's track, [from, to), with its phases (ring: REDUCE_SCATTER /
  //! ALLGATHER per pipelining round) nested inside, the last ending at `reduced`.
  void record_collective(timeline& tl, const char* name, const std::string& args, clock::time_point from,
                         clock::time_point to, clock::time_point reduced) {
    tl.span("engine", name, from, to, args);
    const auto& marks = phases_.marks;
    for (std::size_t i = 0; i < marks.size(); ++i) {
      const auto end = i + 1 < marks.size() ? marks[i + 1].at : reduced;
      if (end >= marks[i].at) tl.span("engine", marks[i].name, marks[i].at, end);
    }
  }

  //! Each tensor's own track: negotiated, waiting, packed, reduced, unpacked.
  static void record_tensors(timeline& tl, const batch& b, const std::string& args, clock::time_point negotiated,
                             const batch_times& t) {
    for (const auto& e : b) {
      tl.span(e->name, "NEGOTIATE", e->enqueued, negotiated);
      tl.span(e->name, "WAIT_FOR_BATCH", negotiated, t.began);
      if (t.packed > t.began) tl.span(e->name, "PACK", t.began, t.packed, args);
      tl.span(e->name, "ALLREDUCE", t.reduce_began, t.reduced, args);
      if (t.unpacked > t.unpack_began && b.size() > 1) tl.span(e->name, "UNPACK", t.unpack_began, t.unpacked);
    }
  }

  error_feedback* feedback_for(entry& e) {
    if constexpr (feedback) return &feedback_[e.name];
    else return nullptr;
  }

  //! A fused buffer's residual: each tensor's own (zeros the first time) at its offset.
  error_feedback* pack_feedback(const fusion_buffer& buffer, const batch& b) {
    fused_feedback_ = error_feedback();
    float* fused = fused_feedback_.residual_for(buffer.elements(), "fusion engine: ");
    for (std::size_t i = 0; i < b.size(); ++i) {
      auto& mine = feedback_[b[i]->name];
      if (mine.residual().size() == b[i]->meta.count)
        std::memcpy(fused + buffer.offset(i), mine.residual().data(), b[i]->meta.count * sizeof(float));
    }
    return &fused_feedback_;
  }
  void unpack_feedback(const fusion_buffer& buffer, const batch& b) {
    const float* fused = fused_feedback_.residual().data();
    for (std::size_t i = 0; i < b.size(); ++i) {
      auto& mine = feedback_[b[i]->name];
      if (!mine.residual().empty() && mine.residual().size() != b[i]->meta.count) mine.reset();
      float* r = mine.residual_for(b[i]->meta.count, "fusion engine: ");
      std::memcpy(r, fused + buffer.offset(i), b[i]->meta.count * sizeof(float));
    }
  }

  bool overlap_;
  algorithm::phase_log phases_;  //!< the current collective's phases, when the timeline records
  fusion_buffer buffers_[2];     //!< in turn: [0]; overlapped: alternating
  std::vector<const_tensor_view> views_in_;  //!< pack's and unpack's scratch (one thread at a time each)
  std::vector<tensor_view> views_out_;
  std::unordered_map<std::string, error_feedback> feedback_;  //!< under feedback_mutex_
  mutable std::mutex feedback_mutex_;
  error_feedback fused_feedback_;
  background_worker copier_{"tutti-fusecopy"};  //!< last: joined before the buffers go
};

}  // namespace tutti::fusion
