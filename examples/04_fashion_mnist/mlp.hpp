//! @file mlp.hpp  Example 04's model and data: a 784-256-128-10 ReLU network on Fashion-MNIST.
//!
//! `mlp` is a tutti::trainer::model: six parameters in plain std::vector<float>s (torch.nn.Linear's
//! layout, weight out × in row-major), matrix work through Eigen::Map over them, softmax
//! cross-entropy. Its backward pass hands each gradient over the moment it is final, last layer
//! first, so the trainer reduces fc3's gradients while fc2's and fc1's are still being computed.
//! Outputs depend only on the inputs, bit for bit: Eigen runs on this thread only, and every sum
//! whose order Eigen might pick from a pointer's alignment (the bias gradients, the loss) is a
//! plain loop here, so replicas in different processes stay identical.
//!
//! `fashion_dataset` holds images and labels and gathers any records, by index, into a batch.
#pragma once
#ifndef EIGEN_DONT_PARALLELIZE
#define EIGEN_DONT_PARALLELIZE
#endif
#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <tutti/core/error.hpp>
#include <tutti/trainer/model.hpp>

#include "idx.hpp"

namespace fashion_mnist {

//! Where Debian's dataset-fashion-mnist puts the files.
inline const std::filesystem::path default_data_dir = "/usr/share/datasets/fashion-mnist";

//! The ten classes, in label order.
inline constexpr std::array<const char*, 10> class_names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                            "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

class mlp {
 public:
  static constexpr std::size_t inputs = 784, hidden1 = 256, hidden2 = 128, classes = 10;

  //! `size` records: their images row-major (size × 784, values in [0, 1]) and their labels.
  struct batch_type {
    std::size_t size = 0;
    std::vector<float> images;
    std::vector<std::uint8_t> labels;
  };

  //! Initialised as torch.nn.Linear does (Kaiming-uniform with a = √5: weights and biases uniform
  //! in ±1/√fan_in), from `seed` alone through a generator of our own, so every platform and
  //! standard library draws the same numbers.
  explicit mlp(std::uint64_t seed = 0) {
    const std::array<std::pair<std::size_t, std::size_t>, 3> shapes = {{{inputs, hidden1}, {hidden1, hidden2}, {hidden2, classes}}};
    for (std::size_t l = 0; l < 3; ++l) {
      auto& layer = layers_[l];
      layer.in = shapes[l].first;
      layer.out = shapes[l].second;
      layer.weight.resize(layer.out * layer.in);
      layer.bias.resize(layer.out);
      layer.weight_grad.assign(layer.weight.size(), 0.0f);
      layer.bias_grad.assign(layer.bias.size(), 0.0f);
      const float bound = 1.0f / std::sqrt(static_cast<float>(layer.in));
      fill_uniform(layer.weight, bound, seed, 2 * l);
      fill_uniform(layer.bias, bound, seed, 2 * l + 1);
    }
  }

  //! fc1.weight, fc1.bias, fc2.weight, fc2.bias, fc3.weight, fc3.bias (indices 0-5), pointing into
  //! this object: valid while it lives and is not moved.
  [[nodiscard]] std::vector<tutti::trainer::parameter> parameters() {
    std::vector<tutti::trainer::parameter> out;
    for (std::size_t l = 0; l < 3; ++l) {
      auto& layer = layers_[l];
      const std::string prefix = "fc" + std::to_string(l + 1);
      out.push_back({prefix + ".weight", layer.weight, layer.weight_grad});
      out.push_back({prefix + ".bias", layer.bias, layer.bias_grad});
    }
    return out;
  }

  //! Overwrites every gradient with the batch's mean gradient of the cross-entropy; calls ready(4),
  //! ready(5) (fc3) as soon as they are final, then ready(2), ready(3), then ready(0), ready(1).
  tutti::trainer::metrics forward_backward(const batch_type& batch, const tutti::trainer::gradient_ready& ready) {
    check(batch, "forward_backward");
    const auto n = static_cast<Eigen::Index>(batch.size);
    const map_const x(batch.images.data(), n, static_cast<Eigen::Index>(inputs));
    auto m = forward(x, batch, /*with_gradient=*/true);

    // delta_ holds dLoss/dLogits; each layer turns it into its input's gradient for the next.
    backward_layer(2, h2_, ready);
    delta_in_.noalias() = delta_ * weight(2);
    relu_mask(delta_in_, h2_);
    std::swap(delta_, delta_in_);
    backward_layer(1, h1_, ready);
    delta_in_.noalias() = delta_ * weight(1);
    relu_mask(delta_in_, h1_);
    std::swap(delta_, delta_in_);
    backward_layer(0, x, ready);
    return m;
  }

  //! The batch's mean loss and accuracy; no gradient is touched.
  tutti::trainer::metrics evaluate(const batch_type& batch) {
    check(batch, "evaluate");
    const map_const x(batch.images.data(), static_cast<Eigen::Index>(batch.size), static_cast<Eigen::Index>(inputs));
    return forward(x, batch, /*with_gradient=*/false);
  }

 private:
  using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using map_const = Eigen::Map<const matrix>;
  using map = Eigen::Map<matrix>;

  struct layer_state {
    std::size_t in = 0, out = 0;
    std::vector<float> weight, bias, weight_grad, bias_grad;
  };

  //! splitmix64 (Steele, Lea, Flood 2014): one stream per (seed, parameter), 24-bit uniforms.
  static void fill_uniform(std::vector<float>& v, float bound, std::uint64_t seed, std::uint64_t stream) {
    std::uint64_t state = seed ^ (0x9e3779b97f4a7c15ULL * (stream + 1));
    for (auto& x : v) {
      state += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = state;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      z ^= z >> 31;
      const float u = static_cast<float>(z >> 40) * 0x1p-24f;  // [0, 1)
      x = bound * (2.0f * u - 1.0f);
    }
  }

  static void check(const batch_type& b, const char* call) {
    if (b.size == 0) throw tutti::invalid_argument(std::string("mlp::") + call + "(batch): the batch is empty");
    if (b.images.size() != b.size * inputs || b.labels.size() != b.size)
      throw tutti::invalid_argument(std::string("mlp::") + call + "(batch): a batch of " + std::to_string(b.size) +
                                    " records needs " + std::to_string(b.size * inputs) + " pixels and " +
                                    std::to_string(b.size) + " labels; it has " + std::to_string(b.images.size()) +
                                    " and " + std::to_string(b.labels.size()));
    for (std::size_t r = 0; r < b.size; ++r)
      if (b.labels[r] >= classes)
        throw tutti::invalid_argument(std::string("mlp::") + call + "(batch): label " + std::to_string(b.labels[r]) +
                                      " of record " + std::to_string(r) + " is not a class (0-9)");
  }

  [[nodiscard]] map_const weight(std::size_t l) const {
    const auto& layer = layers_[l];
    return {layer.weight.data(), static_cast<Eigen::Index>(layer.out), static_cast<Eigen::Index>(layer.in)};
  }

  //! out = in · Wᵀ + b, then ReLU unless it is the last layer.
  template <class In>
  void dense(std::size_t l, const In& in, matrix& out, bool relu) const {
    const auto& layer = layers_[l];
    out.resize(in.rows(), static_cast<Eigen::Index>(layer.out));
    out.noalias() = in * weight(l).transpose();
    for (Eigen::Index r = 0; r < out.rows(); ++r) {
      float* row = out.row(r).data();
      for (std::size_t j = 0; j < layer.out; ++j) {
        const float v = row[j] + layer.bias[j];
        row[j] = relu && v < 0.0f ? 0.0f : v;
      }
    }
  }

  //! Forward through all layers; loss and accuracy; with_gradient: delta_ = dLoss/dLogits.
  tutti::trainer::metrics forward(const map_const& x, const batch_type& batch, bool with_gradient) {
    dense(0, x, h1_, true);
    dense(1, h1_, h2_, true);
    dense(2, h2_, logits_, false);
    const auto n = logits_.rows();
    if (with_gradient) delta_.resize(n, static_cast<Eigen::Index>(classes));
    const float inv_n = 1.0f / static_cast<float>(n);
    double loss = 0;
    std::size_t correct = 0;
    for (Eigen::Index r = 0; r < n; ++r) {
      const float* z = logits_.row(r).data();
      std::size_t best = 0;
      for (std::size_t j = 1; j < classes; ++j)
        if (z[j] > z[best]) best = j;
      const std::size_t label = batch.labels[static_cast<std::size_t>(r)];
      correct += best == label;
      std::array<float, classes> e{};
      float sum = 0;
      for (std::size_t j = 0; j < classes; ++j) sum += e[j] = std::exp(z[j] - z[best]);
      loss += static_cast<double>(std::log(sum) - (z[label] - z[best]));
      if (with_gradient) {
        float* d = delta_.row(r).data();
        for (std::size_t j = 0; j < classes; ++j) d[j] = (e[j] / sum - (j == label ? 1.0f : 0.0f)) * inv_n;
      }
    }
    return {{"loss", loss / static_cast<double>(n)},
            {"accuracy", static_cast<double>(correct) / static_cast<double>(n)}};
  }

  //! Layer l's gradients from delta_ (dLoss/d its output) and its input, then ready() for both.
  template <class In>
  void backward_layer(std::size_t l, const In& in, const tutti::trainer::gradient_ready& ready) {
    auto& layer = layers_[l];
    map gw(layer.weight_grad.data(), static_cast<Eigen::Index>(layer.out), static_cast<Eigen::Index>(layer.in));
    gw.noalias() = delta_.transpose() * in;
    if (ready) ready(2 * l);
    for (std::size_t j = 0; j < layer.out; ++j) layer.bias_grad[j] = 0.0f;
    for (Eigen::Index r = 0; r < delta_.rows(); ++r) {
      const float* d = delta_.row(r).data();
      for (std::size_t j = 0; j < layer.out; ++j) layer.bias_grad[j] += d[j];
    }
    if (ready) ready(2 * l + 1);
  }

  //! Gradient through ReLU: zero where the unit was off.
  static void relu_mask(matrix& grad, const matrix& activation) {
    float* g = grad.data();
    const float* a = activation.data();
    for (Eigen::Index i = 0; i < grad.size(); ++i)
      if (a[i] <= 0.0f) g[i] = 0.0f;
  }

  std::array<layer_state, 3> layers_;
  // Scratch kept between calls, so steps of one batch size allocate nothing after the first.
  matrix h1_, h2_, logits_, delta_, delta_in_;
};

//! Fashion-MNIST (or any 28 × 28, 10-class IDX set) in memory; a tutti::trainer::dataset of
//! mlp batches.
class fashion_dataset {
 public:
  fashion_dataset(idx_images images, std::vector<std::uint8_t> labels)
      : pixels_(std::move(images.pixels)), labels_(std::move(labels)) {
    if (images.pixels_per_image() != mlp::inputs)
      throw tutti::invalid_argument("fashion_dataset: images of " + std::to_string(images.rows) + " x " +
                                    std::to_string(images.cols) + " pixels; the model reads 28 x 28");
    if (images.count != labels_.size())
      throw tutti::invalid_argument("fashion_dataset: " + std::to_string(images.count) + " images but " +
                                    std::to_string(labels_.size()) + " labels");
  }

  //! `<dir>/<split>-{images-idx3,labels-idx1}-ubyte.gz`, split "train" (60,000) or "t10k"
  //! (10,000); the first `max_count` records only, when given.
  [[nodiscard]] static fashion_dataset load(const std::filesystem::path& dir, const std::string& split,
                                            std::size_t max_count = std::numeric_limits<std::size_t>::max()) {
    auto data = read_idx_split(dir, split, max_count, mlp::classes);
    return {std::move(data.images), std::move(data.labels)};
  }

  [[nodiscard]] std::size_t size() const noexcept { return labels_.size(); }

  //! The records at `indices`, in that order (repeats allowed).
  [[nodiscard]] mlp::batch_type batch(std::span<const std::size_t> indices) const {
    mlp::batch_type b;
    b.size = indices.size();
    b.images.resize(indices.size() * mlp::inputs);
    b.labels.resize(indices.size());
    for (std::size_t i = 0; i < indices.size(); ++i) {
      const std::size_t k = indices[i];
      if (k >= size())
        throw tutti::invalid_argument("fashion_dataset::batch: index " + std::to_string(k) + " of a set of " +
                                      std::to_string(size()) + " records");
      std::copy_n(pixels_.begin() + static_cast<std::ptrdiff_t>(k * mlp::inputs), mlp::inputs,
                  b.images.begin() + static_cast<std::ptrdiff_t>(i * mlp::inputs));
      b.labels[i] = labels_[k];
    }
    return b;
  }

 private:
  std::vector<float> pixels_;  //!< size() × 784, row-major
  std::vector<std::uint8_t> labels_;
};

static_assert(tutti::trainer::model<mlp>, "mlp must satisfy tutti::trainer::model");
static_assert(tutti::trainer::dataset<fashion_dataset, mlp::batch_type>,
              "fashion_dataset must satisfy tutti::trainer::dataset<mlp::batch_type>");

}  // namespace fashion_mnist
