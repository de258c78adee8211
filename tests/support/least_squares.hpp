//! @file least_squares.hpp  The trainer's test model, shared by trainer_test.cpp and the fault
//! campaign's worker (tests/netns/fault_worker.cpp): y = W x + b, loss = mean over the batch of
//! ½‖y − t‖², whose gradients are exactly known; and synthetic records for it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <random>
#include <span>
#include <vector>

#include <tutti/trainer/concepts.hpp>

namespace tutti_test {

template <std::size_t Inputs, std::size_t Outputs>
struct least_squares_model {
  static constexpr std::size_t inputs = Inputs, outputs = Outputs;
  struct batch_type {
    std::vector<float> x, t;  // row-major, one record per row
    std::size_t n = 0;
  };
  std::vector<float> w = std::vector<float>(inputs * outputs), b = std::vector<float>(outputs);
  std::vector<float> gw = std::vector<float>(inputs * outputs), gb = std::vector<float>(outputs);
  double largest_term = 0;  //!< max over steps of the largest |term| a gradient entry sums (for the fp32 bound)
  std::function<void()> before_each_gradient;  //!< a test's pause before each gradient is handed over

  explicit least_squares_model(unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    for (auto& v : w) v = u(rng);
    for (auto& v : b) v = u(rng);
  }
  std::vector<tutti::trainer::parameter> parameters() { return {{"w", w, gw}, {"b", b, gb}}; }

  //! Gradients are written last parameter first (b, then W), each handed over as soon as it is
  //! final, like a real backward pass.
  tutti::trainer::metrics forward_backward(const batch_type& batch, const tutti::trainer::gradient_ready& ready) {
    std::fill(gw.begin(), gw.end(), 0.f);
    std::fill(gb.begin(), gb.end(), 0.f);
    double loss = 0;
    const float inv = 1.0f / static_cast<float>(batch.n);
    for (std::size_t r = 0; r < batch.n; ++r)
      for (std::size_t o = 0; o < outputs; ++o) {
        const float e = output(batch, r, o) - batch.t[r * outputs + o];
        loss += 0.5 * e * e;
        gb[o] += e * inv;
        largest_term = std::max(largest_term, std::abs(static_cast<double>(e)));
        for (std::size_t i = 0; i < inputs; ++i) {
          gw[o * inputs + i] += e * batch.x[r * inputs + i] * inv;
          largest_term = std::max(largest_term, std::abs(static_cast<double>(e * batch.x[r * inputs + i])));
        }
      }
    if (before_each_gradient) before_each_gradient();
    ready(1);
    if (before_each_gradient) before_each_gradient();
    ready(0);
    return {{"loss", loss / static_cast<double>(batch.n)}};
  }
  tutti::trainer::metrics evaluate(const batch_type& batch) {
    double loss = 0;
    for (std::size_t r = 0; r < batch.n; ++r)
      for (std::size_t o = 0; o < outputs; ++o) {
        const float e = output(batch, r, o) - batch.t[r * outputs + o];
        loss += 0.5 * e * e;
      }
    return {{"loss", loss / static_cast<double>(batch.n)}};
  }

 private:
  [[nodiscard]] float output(const batch_type& batch, std::size_t r, std::size_t o) const {
    float y = b[o];
    for (std::size_t i = 0; i < inputs; ++i) y += w[o * inputs + i] * batch.x[r * inputs + i];
    return y;
  }
};

//! `n` records: x ~ N(0, 1), t a fixed linear function of x plus N(0, 0.05²) noise.
template <class Model>
struct least_squares_data {
  static constexpr std::size_t inputs = Model::inputs, outputs = Model::outputs;
  std::vector<float> x, t;
  std::size_t records;
  explicit least_squares_data(std::size_t n, unsigned seed = 3) : records(n) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.f, 1.f);
    x.resize(n * inputs);
    t.resize(n * outputs);
    for (auto& v : x) v = g(rng);
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t o = 0; o < outputs; ++o) {
        float y = 0.3f * static_cast<float>(o);
        for (std::size_t i = 0; i < inputs; ++i) y += 0.1f * static_cast<float>(i + o) * x[r * inputs + i];
        t[r * outputs + o] = y + 0.05f * g(rng);
      }
  }
  [[nodiscard]] std::size_t size() const { return records; }
  [[nodiscard]] typename Model::batch_type batch(std::span<const std::size_t> idx) const {
    typename Model::batch_type b;
    b.n = idx.size();
    for (auto r : idx) {
      b.x.insert(b.x.end(), x.begin() + static_cast<std::ptrdiff_t>(r * inputs),
                 x.begin() + static_cast<std::ptrdiff_t>((r + 1) * inputs));
      b.t.insert(b.t.end(), t.begin() + static_cast<std::ptrdiff_t>(r * outputs),
                 t.begin() + static_cast<std::ptrdiff_t>((r + 1) * outputs));
    }
    return b;
  }
};

}  // namespace tutti_test
