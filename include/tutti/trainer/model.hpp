//! @file model.hpp  What data_parallel_trainer asks of a model and a dataset.
#pragma once
#include <concepts>
#include <cstddef>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace tutti::trainer {

//! One trainable tensor: its values and its gradient (the same length), under a name that is the
//! same on every rank (it names the tensor in the fusion engine and in checkpoints).
struct parameter {
  std::string name;
  std::span<float> value;
  std::span<float> grad;
};

//! Named numbers a step or an evaluation reports ("loss", "accuracy", ...), averaged over records.
using metrics = std::map<std::string, double>;

//! Called by forward_backward with a parameter's index as soon as its gradient is final (last
//! layer first), so the trainer can hand it to the fusion engine while backward goes on.
using gradient_ready = std::function<void(std::size_t)>;

/// A Model has a stable list of parameters (pointers valid for the model's life) and
///  - `forward_backward(batch, ready)`: overwrites every gradient with this batch's mean gradient,
///    calls `ready(i)` once per parameter as its gradient is final, returns the batch's metrics;
///  - `evaluate(batch)`: metrics only, no gradients.
template <class M>
concept model = requires(M& m, const typename M::batch_type& b, const gradient_ready& ready) {
  typename M::batch_type;
  { m.parameters() } -> std::same_as<std::vector<parameter>>;
  { m.forward_backward(b, ready) } -> std::same_as<metrics>;
  { m.evaluate(b) } -> std::same_as<metrics>;
};

/// A Dataset holds `size()` records and gathers any of them, by index, into a Model's batch.
template <class D, class Batch>
concept dataset = requires(const D& d, std::span<const std::size_t> indices) {
  { d.size() } -> std::convertible_to<std::size_t>;
  { d.batch(indices) } -> std::same_as<Batch>;
};

}  // namespace tutti::trainer
