//! @file sharding.hpp  Which records each slot trains on: Determined's batch semantics, deterministic.
//!
//! Each epoch visits the dataset in one order, a permutation drawn from (seed, epoch) — the same on
//! every slot. Global batch b of an epoch is the next `global` records of that order; slot s takes
//! its disjoint share [s·P, (s+1)·P) of it, P = global // slots (rounded down), and the remainder
//! global − slots·P are dropped (the last records of each global batch). So the union over slots of
//! one global batch is exactly the records one slot would see with a global batch of slots·P, and
//! a run's data depend only on (seed, epoch, batch), never on timing: resuming from a checkpoint
//! at batch n sees what the uninterrupted run saw.
#pragma once
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tutti/core/error.hpp"

namespace tutti::trainer {

//! Determined's batch arithmetic.
struct batch_plan {
  std::size_t global = 0;    //!< hyperparameters.global_batch_size
  std::size_t slots = 1;     //!< resources.slots_per_trial
  std::size_t per_slot = 0;  //!< global // slots
  std::size_t dropped = 0;   //!< global - slots * per_slot: records per batch nobody trains on

  [[nodiscard]] static batch_plan make(std::size_t global, std::size_t slots) {
    if (slots == 0) throw invalid_argument("resources.slots_per_trial must be at least 1");
    if (global < slots)
      throw invalid_argument("hyperparameters.global_batch_size " + std::to_string(global) +
                             " is smaller than resources.slots_per_trial " + std::to_string(slots) +
                             ": every slot needs at least one record per batch");
    return {global, slots, global / slots, global - slots * (global / slots)};
  }
  [[nodiscard]] std::size_t trained() const noexcept { return per_slot * slots; }  //!< records per global batch
};

class shard_sampler {
 public:
  shard_sampler(std::size_t records, batch_plan plan, std::uint64_t seed) : records_(records), plan_(plan), seed_(seed) {
    if (records < plan.global)
      throw invalid_argument("the training set has " + std::to_string(records) +
                             " records, fewer than one global batch of " + std::to_string(plan.global));
  }

  //! Full global batches per pass over the data (a last partial one is skipped, as Determined does).
  [[nodiscard]] std::size_t batches_per_epoch() const noexcept { return records_ / plan_.global; }

  //! The dataset indices slot `slot` trains on in global batch `batch` (counted from the start of
  //! training); epoch = batch / batches_per_epoch().
  [[nodiscard]] std::vector<std::size_t> indices(std::size_t batch, std::size_t slot) {
    const std::size_t epoch = batch / batches_per_epoch(), in_epoch = batch % batches_per_epoch();
    if (epoch != order_epoch_ || order_.empty()) shuffle(epoch);
    const std::size_t first = in_epoch * plan_.global + slot * plan_.per_slot;
    return {order_.begin() + static_cast<std::ptrdiff_t>(first),
            order_.begin() + static_cast<std::ptrdiff_t>(first + plan_.per_slot)};
  }

  [[nodiscard]] const batch_plan& plan() const noexcept { return plan_; }

 private:
  void shuffle(std::size_t epoch) {
    order_.resize(records_);
    std::iota(order_.begin(), order_.end(), std::size_t{0});
    // A Fisher-Yates shuffle with our own index draw: std::shuffle's algorithm is the library's
    // choice, and checkpoints must resume identically under any standard library.
    std::mt19937_64 rng(seed_ ^ (0x9e3779b97f4a7c15ull * (epoch + 1)));
    for (std::size_t i = records_; i > 1; --i) {
      const std::size_t j = static_cast<std::size_t>(rng() % i);
      std::swap(order_[i - 1], order_[j]);
    }
    order_epoch_ = epoch;
  }

  std::size_t records_;
  batch_plan plan_;
  std::uint64_t seed_;
  std::vector<std::size_t> order_;
  std::size_t order_epoch_ = 0;
};

}  // namespace tutti::trainer
