//! @file fit_shaped.hpp  Fitting the token-bucket shaped link: max(the unshaped schedule, the link), by regimes.
//!
//! On a token-bucket shaped link a call takes the larger of two linear times (cost_model.hpp's
//! seconds(), tuner/shaped_link.hpp): the schedule's as if unshaped (fit.hpp's parameters) and the
//! link's (cost_parameters::shaped_link: seconds per byte within the bucket, beyond it, beyond it in
//! exchange steps). The max makes the fit nonlinear, but each sample is linear in one regime: so
//! assign every sample to the regime that prices it higher with the current parameters, fit each
//! regime's parameters to its own samples by non-negative least squares on the relative error (the
//! unshaped ones by fit(), held parameters kept), and repeat until the assignment stops changing —
//! at most `max_rounds` times, keeping the parameters with the lowest RMS error seen (an assignment
//! may cycle). Start: the unshaped parameters fitted to every sample, the link's to every sample
//! with link bytes. Needs Eigen 3 (tutti::eigen).
#pragma once
#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/tuner/cost_model.hpp"
#include "tutti/tuner/fit.hpp"

namespace tutti::tuner {

namespace detail {
inline std::array<double, 3> link_row(const cost_terms& t) noexcept { return {t.link_within, t.link_paced, t.link_exchange}; }

//! The link's three seconds-per-byte fitted to `samples` (those with link bytes), or nullopt when none has any.
inline std::optional<cost_parameters::shaped_link> fit_link(std::span<const timed_sample> samples, const std::vector<std::size_t>& which) {
  std::array<int, 3> column{-1, -1, -1};
  int unknowns = 0;
  for (std::size_t k = 0; k < 3; ++k) {
    bool used = false;
    for (const std::size_t i : which) used = used || link_row(samples[i].terms)[k] > 0;
    if (used) column[k] = unknowns++;
  }
  if (unknowns == 0) return std::nullopt;
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(which.size()), unknowns);
  const Eigen::VectorXd b = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(which.size()));
  for (std::size_t r = 0; r < which.size(); ++r) {
    const auto row = link_row(samples[which[r]].terms);
    for (std::size_t k = 0; k < 3; ++k)
      if (column[k] >= 0) a(static_cast<Eigen::Index>(r), column[k]) = row[k] / samples[which[r]].seconds;
  }
  const Eigen::VectorXd norms = a.colwise().norm().transpose();
  for (Eigen::Index j = 0; j < a.cols(); ++j) a.col(j) /= norms(j);
  const Eigen::VectorXd x = nonnegative_least_squares(a, b).cwiseQuotient(norms);
  std::array<double, 3> v{};
  for (std::size_t k = 0; k < 3; ++k) v[k] = column[k] >= 0 ? x(column[k]) : 0;
  return cost_parameters::shaped_link{v[0], v[1], v[2]};
}

//! fit() of the samples in `which` with their link terms dropped (the unshaped regime), or nullopt when too few.
inline std::optional<fit_result> fit_unshaped(std::span<const timed_sample> samples, const std::vector<std::size_t>& which,
                                              const held_parameters& held) {
  std::vector<timed_sample> sub;
  sub.reserve(which.size());
  for (const std::size_t i : which) {
    timed_sample s = samples[i];
    s.terms.link_within = s.terms.link_paced = s.terms.link_exchange = 0;
    sub.push_back(s);
  }
  try {
    return fit(sub, held);
  } catch (const invalid_argument&) {  // fewer samples than parameters in this regime: keep the last
    return std::nullopt;
  }
}
}  // namespace detail

//! Fits the unshaped parameters and the shaped link's to samples whose terms carry link bytes
//! (terms_of with machine_shape::token_bucket); see the file comment. Throws invalid_argument as
//! fit() does for a non-positive time, or when the samples cannot fit the unshaped parameters.
[[nodiscard]] inline fit_result fit_token_bucket(std::span<const timed_sample> samples, const held_parameters& held = {},
                                                 int max_rounds = 32) {
  std::vector<std::size_t> all(samples.size()), linked;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double s = samples[i].seconds;
    if (!(s > 0) || !std::isfinite(s))
      throw invalid_argument("tuner::fit_token_bucket: sample " + std::to_string(i) + " has time " + std::to_string(s) +
                             " s; every measured time must be finite and > 0");
    all[i] = i;
    if (samples[i].terms.on_shaped_link()) linked.push_back(i);
  }
  const auto first = detail::fit_unshaped(samples, all, held);
  if (!first)
    throw invalid_argument("tuner::fit_token_bucket: " + std::to_string(samples.size()) +
                           " sample(s) for the unshaped parameters; need at least as many samples as parameters to fit");
  cost_parameters p = first->parameters;
  p.link = detail::fit_link(samples, linked).value_or(cost_parameters::shaped_link{});

  fit_result best = *first;  // its flags: which unshaped parameters the samples exercise
  double best_rms = std::numeric_limits<double>::infinity();
  std::vector<char> assigned;  // per sample, 1: the link's time is the larger
  for (int round = 0; round < max_rounds; ++round) {
    std::vector<char> now(samples.size(), 0);
    std::vector<std::size_t> unshaped, paced;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const cost_terms& t = samples[i].terms;
      now[i] = t.on_shaped_link() && link_seconds(p, t) > summed_seconds(p, t);
      (now[i] ? paced : unshaped).push_back(i);
    }
    if (now == assigned) break;
    assigned = now;
    if (const auto f = detail::fit_unshaped(samples, unshaped, held)) {
      const auto link = p.link;
      p = f->parameters, p.link = link;
    }
    if (const auto l = detail::fit_link(samples, paced)) p.link = *l;
    double sum = 0, largest = 0;
    std::size_t bound = 0;
    for (const auto& s : samples) {
      const double e = (seconds(p, s.terms) - s.seconds) / s.seconds;
      sum += e * e, largest = std::max(largest, std::abs(e));
      bound += s.terms.on_shaped_link() && link_seconds(p, s.terms) > summed_seconds(p, s.terms);
    }
    const double rms = std::sqrt(sum / static_cast<double>(samples.size()));
    if (rms < best_rms) {
      best_rms = rms;
      best.parameters = p;
      best.rms_relative_error = rms, best.max_relative_error = largest;
      best.link_bound = bound, best.link_fitted = !paced.empty();
    }
  }
  return best;
}

}  // namespace tutti::tuner
