//! @file gradient_buckets.hpp  Which gradients go to the fusion engine together: fixed buckets, so a
//! step reduces to the same bits whatever the timing.
//!
//! Why: the fusion engine fuses the tensors that happen to be ready on every rank at a negotiation
//! round, so which gradients share a fusion buffer depends on timing, and the bits of the result
//! depend on it: a ring adds an element in an order set by its offset in the buffer (with 3 or more
//! ranks fp32 addition is not associative), and topk, onebit and int8 choose per chunk of the
//! buffer. A rerun, or a resume from a checkpoint, was then bit-identical only while the machine was
//! quiet (seen in CI: a topk resume differed under load). PyTorch DDP's answer is fixed buckets;
//! this is the same, fitted to the engine:
//!  - the buckets are the engine's own batches (fusion::coordinator::batch, the same greedy cut at
//!    the same threshold) of every parameter, in the order backward produced them in the first step
//!    (which holds its gradients until backward ends, to learn that order);
//!  - each bucket is enqueued as one group (allreduce_async_group: on each rank all at once, so it
//!    becomes ready everywhere in one round), buckets in order, once all of its gradients are final.
//! A round then holds a run of whole consecutive buckets, and the greedy cut of such a run, started
//! at a bucket's first tensor, is exactly those buckets: every step fuses the same tensors the same
//! way. Overlap with backward stays, per bucket. With auto_tune_tensor_fusion the threshold moves
//! with the tuner's measurements (the buckets follow it at the next step), so bits may differ.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "tutti/core/dtype.hpp"
#include "tutti/core/op.hpp"
#include "tutti/fusion/negotiation/coordinator.hpp"

namespace tutti::trainer {

class gradient_buckets {
 public:
  //! `counts[i]`: parameter i's number of float gradients.
  explicit gradient_buckets(std::vector<std::size_t> counts) : counts_(std::move(counts)) {}

  //! A step begins; `threshold` is the fusion threshold in force (bytes). A changed one re-cuts.
  void new_step(std::size_t threshold) {
    if (!order_.empty() && threshold != threshold_) plan(threshold);
    threshold_ = threshold;
    for (std::size_t b = 0; b < buckets_.size(); ++b) missing_[b] = buckets_[b].size();
    next_ = 0;
  }

  //! Parameter i's gradient is final: `enqueue(members)` runs for each bucket that may now go, in order.
  template <class Enqueue>
  void ready(std::size_t i, Enqueue&& enqueue) {
    if (buckets_.empty()) {  // the first step: learn backward's order
      order_.push_back(i);
      return;
    }
    if (missing_[bucket_of_[i]] > 0) --missing_[bucket_of_[i]];
    while (next_ < buckets_.size() && missing_[next_] == 0) enqueue(buckets_[next_++]);
  }

  //! Backward has returned: the first step cuts its buckets; the rest go now (a model that left a
  //! gradient unreported breaks its contract, but nothing waits for it forever).
  template <class Enqueue>
  void backward_done(Enqueue&& enqueue) {
    if (buckets_.empty()) plan(threshold_);
    while (next_ < buckets_.size()) enqueue(buckets_[next_++]);
  }

  [[nodiscard]] const std::vector<std::vector<std::size_t>>& buckets() const noexcept { return buckets_; }

 private:
  void plan(std::size_t threshold) {
    std::vector<bool> seen(counts_.size());
    std::vector<std::size_t> order;
    for (auto i : order_)
      if (i < counts_.size() && !seen[i]) seen[i] = true, order.push_back(i);
    for (std::size_t i = 0; i < counts_.size(); ++i)
      if (!seen[i]) order.push_back(i);
    order_ = order;
    std::vector<std::pair<std::uint32_t, fusion::tensor_meta>> ids;
    for (std::size_t k = 0; k < order.size(); ++k)
      ids.emplace_back(static_cast<std::uint32_t>(k), fusion::tensor_meta{dtype::f32, op::avg, counts_[order[k]]});
    buckets_.clear();
    bucket_of_.assign(counts_.size(), 0);
    for (const auto& cut : fusion::coordinator::batch(ids, threshold)) {
      auto& bucket = buckets_.emplace_back();
      for (auto k : cut) {
        bucket_of_[order[k]] = buckets_.size() - 1;
        bucket.push_back(order[k]);
      }
    }
    missing_.assign(buckets_.size(), 0);
    threshold_ = threshold;
  }

  std::vector<std::size_t> counts_;
  std::vector<std::size_t> order_;  //!< backward's order of the parameters, learnt in the first step
  std::vector<std::vector<std::size_t>> buckets_;
  std::vector<std::size_t> bucket_of_, missing_;
  std::size_t next_ = 0, threshold_ = 0;
};

}  // namespace tutti::trainer
