//! @file fit_table.hpp  Fitting the cost model to a tuning table's samples, with each sample's residual.
//!
//! Each sample (one candidate at one size and layout, tuner/table.hpp) becomes one equation
//! through tuner/predict.hpp's terms_of — the same name -> terms mapping that predicts — and
//! tuner/fit.hpp solves them (least squares on the relative error). A sample with no formula
//! (an algorithm the model does not know, a collective it does not model for that algorithm) or
//! with no positive time is left out and counted. Fit one dtype class at a time (gamma differs
//! between float and integer reductions): `of_class` picks it. On a token-bucket shaped link
//! (machine_shape::token_bucket) the fit is tuner/fit_shaped.hpp's, and the link's parameters are
//! in `fit.parameters.link` only (a table's fitted_model has no place for them). Needs Eigen 3 (tutti::eigen).
#pragma once
#include <cmath>
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/tuner/fit.hpp"
#include "tutti/tuner/fit_shaped.hpp"
#include "tutti/tuner/predict.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::tuner {

//! How the samples were run, where the table does not say it.
struct fit_options {
  double cores_per_node = 0;  //!< cores a node's ranks share (0: unknown, no oversubscription term)
  machine_shape machine{};    //!< links per node, a core's cache, whether the network is the CPUs
  std::optional<dtype_class> of_class;  //!< fit only these samples (none: all)
  //! > 0: every node of every sample ran on one machine with this many cores (shm runs, simulated
  //! nodes, namespace hosts on one VM), so a sample's node had machine_cores / nodes of them;
  //! replaces cores_per_node.
  double machine_cores = 0;
  //! Parameters kept rather than fitted (tuner/fit.hpp: e.g. node_parameters_of another table's fit).
  held_parameters held{};
  [[nodiscard]] double cores_for(const layout& where) const noexcept {
    return machine_cores > 0 ? machine_cores / (where.nodes > 0 ? where.nodes : 1) : cores_per_node;
  }
};

//! One sample against the fitted model.
struct residual {
  std::size_t sample = 0;  //!< index into the samples given
  double measured_s = 0, predicted_s = 0;
  [[nodiscard]] double relative_error() const noexcept { return (predicted_s - measured_s) / measured_s; }
};

struct samples_fit {
  fitted_model model;          //!< what a table stores
  fit_result fit;              //!< the parameters and which were exercised
  std::vector<residual> residuals;  //!< one per sample used, in the samples' order
  std::size_t left_out = 0;    //!< samples with no formula, another dtype class, or no positive time
};

//! Fits the samples; throws invalid_argument when fewer usable samples than parameters remain.
[[nodiscard]] inline samples_fit fit_samples_with_residuals(std::span<const sample> samples, const fit_options& o = {}) {
  samples_fit out;
  std::vector<timed_sample> timed;
  std::vector<std::size_t> used;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const sample& s = samples[i];
    const double t = s.measured.median_us * 1e-6;
    if ((o.of_class && s.dtypes != *o.of_class) || !(t > 0) || !std::isfinite(t)) {
      ++out.left_out;
      continue;
    }
    const auto terms = terms_of(s.measured.algorithm, s.collective_kind, s.where, static_cast<double>(s.bytes), o.cores_for(s.where),
                                s.measured.tuning, o.machine);
    if (!terms) {
      ++out.left_out;
      continue;
    }
    timed.push_back({*terms, t});
    used.push_back(i);
  }
  // a token-bucket shaped link: max(unshaped schedule, link), fitted by regimes (tuner/fit_shaped.hpp)
  out.fit = o.machine.links_shaped && o.machine.token_bucket ? fit_token_bucket(timed, o.held) : fit(timed, o.held);
  const cost_parameters& p = out.fit.parameters;
  out.model.alpha_intra = p.intra.alpha, out.model.beta_intra = p.intra.beta;
  out.model.alpha_inter = p.inter.alpha, out.model.beta_inter = p.inter.beta;
  out.model.gamma = p.gamma, out.model.switch_cost = p.switch_cost, out.model.alpha_sync = p.alpha_sync;
  out.model.base_latency = p.base_latency;
  out.model.memory_beta = p.memory_beta, out.model.cache_bytes = o.machine.cache_bytes;
  out.model.network_on_cpus = o.machine.network_on_cpus;
  out.model.rms_relative_error = out.fit.rms_relative_error, out.model.max_relative_error = out.fit.max_relative_error;
  out.model.samples = out.fit.samples;
  out.residuals.reserve(used.size());
  for (std::size_t k = 0; k < used.size(); ++k) out.residuals.push_back({used[k], timed[k].seconds, seconds(p, timed[k].terms)});
  return out;
}

//! The fitted model of `samples` (what tutti-tune stores in a table's "model").
[[nodiscard]] inline fitted_model fit_samples(std::span<const sample> samples, const fit_options& o = {}) {
  return fit_samples_with_residuals(samples, o).model;
}

}  // namespace tutti::tuner
