//! @file fit.hpp  Fitting the cost model's parameters to measured times (non-negative least squares, Eigen).
//!
//! Every measurement is one equation: its schedule's cost_terms times the unknown parameters equals
//! the measured seconds. Times span six orders of magnitude between 8 B and 256 MiB, so each
//! equation is divided by its measured time: the fit minimises the relative error, and a 2 µs
//! point counts as much as a 2 s one. A parameter no sample exercises (a single-node run has no
//! inter-node terms) is left at 0 and not reported as fitted. The oversubscription term's
//! switch_cost, the cache term's memory_beta (tuner/predict.hpp), the one-sided
//! synchronisation's alpha_sync and the per-call base_latency are columns 6 to 9, each fitted only
//! when some sample exercises it (more ranks than cores, outgrowing the cache, algorithm::direct). Needs Eigen 3 (tutti::eigen).
#pragma once
#include <Eigen/Core>
#include <Eigen/QR>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/tuner/cost_model.hpp"

namespace tutti::tuner {

//! One measured point: the schedule's terms at that size and layout, and its median time.
struct timed_sample {
  cost_terms terms;
  double seconds = 0;
};

//! What a fit found, and how well it explains the samples it was fitted to.
struct fit_result {
  cost_parameters parameters;
  std::array<bool, 5> fitted{};      //!< alpha_intra, beta_intra, alpha_inter, beta_inter, gamma: exercised and not held
  bool switch_cost_fitted = false;   //!< some sample was oversubscribed (cost_terms::s != 0)
  bool memory_beta_fitted = false;   //!< some sample outgrew the cache (cost_terms::m != 0)
  bool alpha_sync_fitted = false;    //!< some sample synchronised one-sidedly (cost_terms::e != 0)
  bool base_latency_fitted = false;  //!< some sample was a collective call (cost_terms::c != 0)
  bool link_fitted = false;          //!< a token-bucket shaped link's (tuner/fit_shaped.hpp): some sample was paced by it
  std::size_t link_bound = 0;        //!< samples the shaped link paces (its time above the unshaped schedule's)
  double rms_relative_error = 0;     //!< sqrt(mean(((predicted - measured) / measured)^2))
  double max_relative_error = 0;     //!< max |predicted - measured| / measured
  std::size_t samples = 0;
};

namespace detail {
inline constexpr std::size_t fit_columns = 9;
inline std::array<double, fit_columns> as_row(const cost_terms& t) noexcept {
  return {t.a_intra, t.b_intra, t.a_inter, t.b_inter, t.g, t.s, t.m, t.e, t.c};
}
//! min |a x - b| subject to x >= 0 (Lawson and Hanson, "Solving Least Squares Problems", 1974,
//! ch. 23): every parameter is a cost, and an unconstrained fit over nearly collinear columns
//! (namespace hosts, where alpha_intra and alpha_inter, or the switch cost and alpha, move
//! together) answered with alphas of -3e8 s and a switch cost of +1e9 s that cancel. Eigen 3.4 has
//! no NNLS outside `unsupported/`, which Debian's package lacks; with at most 9 unknowns the active
//! set method is a few QR solves. Bounded: at most 3 x columns outer steps.
inline Eigen::VectorXd nonnegative_least_squares(const Eigen::MatrixXd& a, const Eigen::VectorXd& b) {
  const Eigen::Index n = a.cols();
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  std::vector<bool> passive(static_cast<std::size_t>(n), false);
  const double tolerance = 1e-12 * std::max(1.0, a.norm() * b.norm());
  const auto solve_passive = [&] {  // least squares over the passive columns, others 0
    std::vector<Eigen::Index> cols;
    for (Eigen::Index j = 0; j < n; ++j)
      if (passive[static_cast<std::size_t>(j)]) cols.push_back(j);
    Eigen::MatrixXd sub(a.rows(), static_cast<Eigen::Index>(cols.size()));
    for (std::size_t k = 0; k < cols.size(); ++k) sub.col(static_cast<Eigen::Index>(k)) = a.col(cols[k]);
    const Eigen::VectorXd zs = sub.colPivHouseholderQr().solve(b);
    Eigen::VectorXd z = Eigen::VectorXd::Zero(n);
    for (std::size_t k = 0; k < cols.size(); ++k) z(cols[k]) = zs(static_cast<Eigen::Index>(k));
    return z;
  };
  for (Eigen::Index outer = 0; outer < 3 * n; ++outer) {
    const Eigen::VectorXd w = a.transpose() * (b - a * x);
    Eigen::Index best = -1;
    for (Eigen::Index j = 0; j < n; ++j)
      if (!passive[static_cast<std::size_t>(j)] && w(j) > tolerance && (best < 0 || w(j) > w(best))) best = j;
    if (best < 0) break;  // the Kuhn-Tucker conditions hold
    passive[static_cast<std::size_t>(best)] = true;
    for (Eigen::Index inner = 0; inner <= n; ++inner) {
      Eigen::VectorXd z = solve_passive();
      double step = 1;
      bool feasible = true;
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<std::size_t>(j)] && z(j) <= 0) {
          feasible = false;
          const double denom = x(j) - z(j);
          if (denom > 0) step = std::min(step, x(j) / denom);
        }
      if (feasible) {
        x = z;
        break;
      }
      x += step * (z - x);
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<std::size_t>(j)] && x(j) <= tolerance) passive[static_cast<std::size_t>(j)] = false, x(j) = 0;
    }
  }
  return x;
}

}  // namespace detail

//! Parameters known before the fit (measured on another table of the same machine), which it
//! keeps instead of finding; in the order of the terms' columns (detail::as_row).
using held_parameters = std::array<std::optional<double>, detail::fit_columns>;

//! The parameters of one node's CPUs and shared memory — alpha_intra, beta_intra, gamma,
//! switch_cost, memory_beta, alpha_sync, base_latency — held at `p`'s: namespace hosts share the
//! machine whose shm table fitted them, and their own samples, dominated by the network, cannot
//! tell them apart from the network's terms (tuner/fit_table.hpp's fit_options::held).
[[nodiscard]] inline held_parameters node_parameters_of(const cost_parameters& p) noexcept {
  held_parameters h;
  h[0] = p.intra.alpha, h[1] = p.intra.beta, h[4] = p.gamma, h[5] = p.switch_cost, h[6] = p.memory_beta;
  h[7] = p.alpha_sync, h[8] = p.base_latency;
  return h;
}

//! Least-squares fit of the parameters the samples exercise (those in `held` are kept at its
//! values, and their part of each time subtracted first). Throws invalid_argument for a
//! non-positive or non-finite time, or fewer samples than parameters to fit.
[[nodiscard]] inline fit_result fit(std::span<const timed_sample> samples, const held_parameters& held = {}) {
  fit_result r;
  r.samples = samples.size();
  std::array<bool, detail::fit_columns> used{};
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double s = samples[i].seconds;
    if (!(s > 0) || !std::isfinite(s))
      throw invalid_argument("tuner::fit: sample " + std::to_string(i) + " has time " + std::to_string(s) +
                             " s; every measured time must be finite and > 0");
    const auto row = detail::as_row(samples[i].terms);
    for (std::size_t k = 0; k < row.size(); ++k) used[k] = used[k] || row[k] != 0;
  }
  std::array<bool, detail::fit_columns> free = used;
  for (std::size_t k = 0; k < free.size(); ++k) free[k] = used[k] && !held[k];
  for (std::size_t k = 0; k < r.fitted.size(); ++k) r.fitted[k] = free[k];
  r.switch_cost_fitted = free[5];
  r.memory_beta_fitted = free[6];
  r.alpha_sync_fitted = free[7];
  r.base_latency_fitted = free[8];
  std::array<int, detail::fit_columns> column{};  // parameter k -> column of the system, or -1
  int unknowns = 0;
  for (std::size_t k = 0; k < column.size(); ++k) column[k] = free[k] ? unknowns++ : -1;
  if (unknowns == 0 || samples.size() < static_cast<std::size_t>(unknowns))
    throw invalid_argument("tuner::fit: " + std::to_string(samples.size()) + " sample(s) for " + std::to_string(unknowns) +
                           " parameter(s) to fit; need at least as many samples, and at least one parameter");

  Eigen::MatrixXd a(static_cast<Eigen::Index>(samples.size()), unknowns);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(samples.size()));
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto row = detail::as_row(samples[i].terms);
    for (std::size_t k = 0; k < row.size(); ++k) {
      if (column[k] >= 0) a(static_cast<Eigen::Index>(i), column[k]) = row[k] / samples[i].seconds;
      else if (held[k]) b(static_cast<Eigen::Index>(i)) -= row[k] * *held[k] / samples[i].seconds;
    }
  }
  // Columns differ by many orders of magnitude (messages vs bytes): scale each to unit norm first.
  Eigen::VectorXd norms = a.colwise().norm().transpose();
  for (Eigen::Index j = 0; j < a.cols(); ++j) a.col(j) /= norms(j);
  const Eigen::VectorXd x = detail::nonnegative_least_squares(a, b).cwiseQuotient(norms);

  std::array<double, detail::fit_columns> value{};
  for (std::size_t k = 0; k < column.size(); ++k)
    if (column[k] >= 0) value[k] = x(column[k]);
    else if (held[k]) value[k] = *held[k];
  r.parameters = {{value[0], value[1]}, {value[2], value[3]}, value[4]};
  r.parameters.switch_cost = value[5];
  r.parameters.memory_beta = value[6];
  r.parameters.alpha_sync = value[7];
  r.parameters.base_latency = value[8];
  double sum = 0;
  for (const auto& s : samples) {
    const double e = (seconds(r.parameters, s.terms) - s.seconds) / s.seconds;
    sum += e * e;
    r.max_relative_error = std::max(r.max_relative_error, std::abs(e));
  }
  r.rms_relative_error = std::sqrt(sum / static_cast<double>(samples.size()));
  return r;
}

}  // namespace tutti::tuner
