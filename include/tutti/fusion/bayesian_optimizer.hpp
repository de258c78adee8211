//! @file bayesian_optimizer.hpp  Bayesian optimisation (Gaussian process + expected improvement) over [0,1]^d: the math of fusion::autotuned.
#pragma once
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "tutti/core/error.hpp"

namespace tutti::fusion {

struct bayesian_options {
  std::size_t initial_samples = 5;  //!< space-filling (Latin hypercube) points before the GP is used
  std::size_t candidates = 2000;    //!< random candidate points scored by EI each step
  double xi = 0.01;                 //!< EI exploration margin (relative to the score scale after normalisation)
  double noise = 1e-3;  //!< GP observation noise variance (scores are normalised to mean 0, sd 1); the least the
                        //!< fit uses: it may pick 10x or 100x when the likelihood says the scores are noisier
  std::uint64_t seed = 1;
  //! Categorical dimensions are unordered (which algorithm): two different levels are equally far
  //! apart, whichever they are, as with a one-hot encoding. Off: levels are ordered (a coarse
  //! number), and level 0 is nearer level 1 than level 4.
  bool unordered_levels = false;
};

namespace detail {

//! A double as the shortest text that reads back the same (1e-09, 0.5, nan): what a message names.
inline std::string show(double v) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  return std::string(buf, end);
}

//! Uniform in [0, 1) from 53 random bits. Not std::uniform_real_distribution: its algorithm is
//! unspecified, and a seed must give the same points with every standard library.
inline double unit_uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

//! The centre (k + 0.5) / levels of the level k that x falls in.
inline double level_centre(double x, std::size_t levels) {
  const auto n = static_cast<double>(levels);
  const double k = std::clamp(std::floor(x * n), 0.0, n - 1.0);
  return (k + 0.5) / n;
}

//! Hyperparameters of the GP, in normalised score units.
struct gp_hyper {
  std::vector<double> inverse_length;  //!< 1 / length scale, per dimension (multiplied, not divided, in the kernel)
  double signal = 1.0;                 //!< kernel variance
  double noise = 1e-3;                 //!< observation noise variance
  //! Per dimension: 1 where the coordinate is an unordered category (bayesian_options::unordered_levels);
  //! empty when none is. Not fitted: it rides along with the fitted values.
  std::vector<std::uint8_t> unordered;
};

//! Matérn 5/2 between two points (columns of d doubles): twice differentiable, so it neither
//! assumes the analytic smoothness of a squared exponential nor the roughness of Matérn 1/2 —
//! the usual choice for measured performance (Snoek et al. 2012). An unordered categorical
//! coordinate contributes 0 when the levels are equal and 1 otherwise (times its inverse length):
//! a one-hot encoding with one length scale shared by its k columns, in one dimension instead of k.
inline double matern52(const double* a, const double* b, const gp_hyper& h) {
  double r2 = 0;
  for (std::size_t k = 0; k < h.inverse_length.size(); ++k) {
    const double apart = !h.unordered.empty() && h.unordered[k] ? (a[k] == b[k] ? 0.0 : 1.0) : a[k] - b[k];
    const double t = apart * h.inverse_length[k];
    r2 += t * t;
  }
  const double s = std::sqrt(5.0 * r2);
  return h.signal * (1.0 + s + s * s / 3.0) * std::exp(-s);
}

//! A GP conditioned on samples (columns of x) with normalised scores y.
struct gp_model {
  gp_hyper hyper;
  //! Of K + noise I (+ jitter). Made from an empty matrix, not default-constructed: Eigen 3.4's
  //! default LLT leaves info() uninitialised, and moving one (fit's swap) reads it (UBSan found it).
  Eigen::LLT<Eigen::MatrixXd> llt{Eigen::MatrixXd(0, 0)};
  Eigen::VectorXd alpha;            //!< (K + noise I)^-1 y
  double log_likelihood = -std::numeric_limits<double>::infinity();
};

//! Conditions a GP with hyperparameters h; false when K + noise I is not positive definite even
//! with jitter (these hyperparameters are then skipped).
inline bool condition(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const gp_hyper& h, gp_model& out) {
  const Eigen::Index n = x.cols();
  Eigen::MatrixXd k(n, n);
  for (Eigen::Index j = 0; j < n; ++j) {
    k(j, j) = h.signal + h.noise;
    for (Eigen::Index i = j + 1; i < n; ++i) k(i, j) = k(j, i) = matern52(x.col(i).data(), x.col(j).data(), h);
  }
  out.llt.compute(k);
  // Two samples at (nearly) the same point make K singular up to rounding; the noise term usually
  // prevents it, a growing jitter handles the rest.
  for (double jitter = 1e-10 * h.signal; out.llt.info() != Eigen::Success; jitter *= 10) {
    if (jitter > 1e-2 * h.signal) return false;
    out.llt.compute(k + jitter * Eigen::MatrixXd::Identity(n, n));
  }
  out.alpha = out.llt.solve(y);
  const auto l = out.llt.matrixLLT().diagonal().array();
  out.log_likelihood = -0.5 * y.dot(out.alpha) - l.log().sum() -
                       0.5 * static_cast<double>(n) * std::log(2.0 * std::numbers::pi);
  out.hyper = h;
  return true;
}

//! Fits the hyperparameters by maximising the log marginal likelihood over a fixed grid, one
//! coordinate at a time (length scales, then signal, then noise; two sweeps) from the best
//! isotropic length scale: about 90 Choleskys, a few milliseconds at 50 samples and d = 4, where a
//! gradient optimiser with restarts would cost tens. Deterministic: no random restarts.
inline gp_model fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, double noise_floor,
                    const std::vector<std::uint8_t>& unordered = {}) {
  // Length scales of a unit box: 0.05 resolves a few percent of the range, 5 makes a dimension flat.
  static constexpr double lengths[] = {0.05, 0.1, 0.2, 0.35, 0.6, 1.0, 2.0, 5.0};
  static constexpr double signals[] = {0.25, 0.5, 1.0, 2.0, 4.0};  // scores are normalised: near 1
  const double noises[] = {noise_floor, 10 * noise_floor, 100 * noise_floor};
  const auto d = static_cast<std::size_t>(x.rows());

  gp_model best, trial;
  gp_hyper h{std::vector<double>(d, 1.0), 1.0, noise_floor, unordered};
  const auto consider = [&](const gp_hyper& candidate) {
    if (condition(x, y, candidate, trial) && trial.log_likelihood > best.log_likelihood) std::swap(best, trial);
  };
  for (double l : lengths) {
    std::fill(h.inverse_length.begin(), h.inverse_length.end(), 1.0 / l);
    consider(h);
  }
  for (int sweep = 0; sweep < 2; ++sweep) {
    for (std::size_t k = 0; k < d; ++k) {
      for (double l : lengths) {
        h = best.hyper;
        h.inverse_length[k] = 1.0 / l;
        consider(h);
      }
    }
    for (double s : signals) {
      h = best.hyper;
      h.signal = s;
      consider(h);
    }
    for (double v : noises) {
      h = best.hyper;
      h.noise = v;
      consider(h);
    }
  }
  if (!std::isfinite(best.log_likelihood)) {
    // Every grid point failed (only with near-duplicate samples and tiny noise): a smooth, noisy GP.
    h = gp_hyper{std::vector<double>(d, 1.0), 1.0, std::max(noise_floor, 1e-2), unordered};
    if (!condition(x, y, h, best)) throw error("bayesian_optimizer: the GP covariance is not positive definite");
  }
  return best;
}

//! Posterior means at the samples themselves: K alpha without the noise term.
inline Eigen::VectorXd mean_at_samples(const Eigen::MatrixXd& x, const gp_model& m) {
  const Eigen::Index n = x.cols();
  Eigen::VectorXd mu(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    double s = 0;
    for (Eigen::Index j = 0; j < n; ++j) s += matern52(x.col(i).data(), x.col(j).data(), m.hyper) * m.alpha(j);
    mu(i) = s;
  }
  return mu;
}

//! Expected improvement over `incumbent` by more than xi, for a normal posterior (mean, sd).
inline double expected_improvement(double mean, double sd, double incumbent, double xi) {
  const double gain = mean - incumbent - xi;
  if (sd < 1e-12) return std::max(gain, 0.0);
  const double z = gain / sd;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi);
  return std::max(gain * cdf + sd * pdf, 0.0);
}

}  // namespace detail

//! Maximises an unknown, noisy score over the unit box [0,1]^d; some dimensions may be categorical
//! (an integer number of levels: the optimiser proposes values at level centres (k+0.5)/levels).
//! Not thread-safe: one thread calls next() and observe(); the const members only read.
class bayesian_optimizer {
 public:
  //! levels[i] == 0: dimension i is continuous in [0,1]; levels[i] == k >= 1: categorical with k choices.
  explicit bayesian_optimizer(std::vector<std::size_t> levels, bayesian_options o = {})
      : levels_(std::move(levels)), options_(o), rng_(o.seed) {
    if (levels_.empty())
      throw invalid_argument("bayesian_optimizer(levels, options) requires at least one dimension; got levels.size() == 0");
    if (options_.candidates == 0)
      throw invalid_argument("bayesian_optimizer(levels, options) requires options.candidates >= 1; got 0");
    if (!(options_.noise > 0) || !std::isfinite(options_.noise))
      throw invalid_argument("bayesian_optimizer(levels, options) requires a finite options.noise > 0; got " +
                             detail::show(options_.noise));
    if (!(options_.xi >= 0) || !std::isfinite(options_.xi))
      throw invalid_argument("bayesian_optimizer(levels, options) requires a finite options.xi >= 0; got " +
                             detail::show(options_.xi));
    if (options_.unordered_levels)
      for (std::size_t levels : levels_) unordered_.push_back(levels ? 1 : 0);
    latin_hypercube(options_.initial_samples);
  }

  //! The next point to sample (in [0,1]^d): the Latin hypercube first, then the candidate of
  //! largest expected improvement under the GP fitted to every sample so far.
  [[nodiscard]] std::vector<double> next() {
    if (samples() < std::max<std::size_t>(options_.initial_samples, 2)) {
      if (design_cursor_ < design_.size()) return design_[design_cursor_++];
      return random_point();  // asked more often than observed, or too few initial samples for a GP
    }
    const Eigen::MatrixXd x = sample_matrix();
    const Eigen::VectorXd y = normalised_scores();
    const detail::gp_model m = detail::fit(x, y, options_.noise, unordered_);
    // The incumbent is the best posterior mean at a sample, not the best observation: a lucky noisy
    // score would otherwise make every honest candidate look hopeless.
    const Eigen::VectorXd mu_s = detail::mean_at_samples(x, m);
    Eigen::Index best_sample = 0;
    const double incumbent = mu_s.maxCoeff(&best_sample);

    const Eigen::MatrixXd c = candidates(x.col(best_sample));
    const Eigen::Index n = x.cols(), nc = c.cols();
    Eigen::MatrixXd ks(n, nc);
    for (Eigen::Index j = 0; j < nc; ++j)
      for (Eigen::Index i = 0; i < n; ++i) ks(i, j) = detail::matern52(x.col(i).data(), c.col(j).data(), m.hyper);
    const Eigen::VectorXd mean = ks.transpose() * m.alpha;
    m.llt.matrixL().solveInPlace(ks);  // ks becomes L^-1 k*: the variance reduction per candidate
    const Eigen::VectorXd reduction = ks.colwise().squaredNorm().transpose();

    Eigen::Index best = -1, best_fresh = -1;
    double best_ei = -1, best_fresh_ei = -1;
    for (Eigen::Index j = 0; j < nc; ++j) {
      const double sd = std::sqrt(std::max(m.hyper.signal - reduction(j), 0.0));
      const double ei = detail::expected_improvement(mean(j), sd, incumbent, options_.xi);
      if (ei > best_ei) {
        best_ei = ei;
        best = j;
      }
      if (ei > best_fresh_ei && !sampled(c.col(j).data())) {
        best_fresh_ei = ei;
        best_fresh = j;
      }
    }
    // Resampling a point only helps when it is clearly best (noise); on a tie, learn something new.
    if (best_fresh >= 0 && best_fresh_ei >= best_ei - 1e-12) best = best_fresh;
    return {c.col(best).data(), c.col(best).data() + c.rows()};
  }

  //! Records a sample's score (higher is better). Categorical coordinates are stored at their
  //! level's centre, so best_point() returns centres whatever the caller passed.
  void observe(const std::vector<double>& x, double score) {
    if (x.size() != dimensions())
      throw invalid_argument("bayesian_optimizer::observe(x, score) requires x.size() == " +
                             std::to_string(dimensions()) + "; got " + std::to_string(x.size()));
    for (std::size_t k = 0; k < x.size(); ++k)
      if (!(x[k] >= 0.0 && x[k] <= 1.0))
        throw invalid_argument("bayesian_optimizer::observe(x, score) requires x in [0, 1]; got x[" +
                               std::to_string(k) + "] == " + detail::show(x[k]));
    if (!std::isfinite(score))
      throw invalid_argument("bayesian_optimizer::observe(x, score) requires a finite score; got " +
                             detail::show(score));
    for (std::size_t k = 0; k < x.size(); ++k) xs_.push_back(levels_[k] ? detail::level_centre(x[k], levels_[k]) : x[k]);
    ys_.push_back(score);
  }

  //! The best point so far: by the GP's posterior mean at sampled points (robust to noise), or the
  //! best observed when < 2 samples. Throws invalid_argument before the first observe().
  [[nodiscard]] std::vector<double> best_point() const {
    if (ys_.empty())
      throw invalid_argument("bayesian_optimizer::best_point() requires at least one observed sample; got 0");
    std::size_t best = 0;
    if (samples() < 2) {
      best = static_cast<std::size_t>(std::max_element(ys_.begin(), ys_.end()) - ys_.begin());
    } else {
      const Eigen::MatrixXd x = sample_matrix();
      const detail::gp_model m = detail::fit(x, normalised_scores(), options_.noise, unordered_);
      Eigen::Index i = 0;
      detail::mean_at_samples(x, m).maxCoeff(&i);
      best = static_cast<std::size_t>(i);
    }
    const auto first = xs_.begin() + static_cast<std::ptrdiff_t>(best * dimensions());
    return {first, first + static_cast<std::ptrdiff_t>(dimensions())};
  }

  //! The best observed score; -infinity before the first observe().
  [[nodiscard]] double best_score() const {
    return ys_.empty() ? -std::numeric_limits<double>::infinity() : *std::max_element(ys_.begin(), ys_.end());
  }
  [[nodiscard]] std::size_t samples() const noexcept { return ys_.size(); }
  [[nodiscard]] std::size_t dimensions() const noexcept { return levels_.size(); }

 private:
  //! n points, one in each of n strata per dimension, strata shuffled independently per dimension:
  //! every one-dimensional projection is evenly covered, which n uniform points are not.
  void latin_hypercube(std::size_t n) {
    design_.assign(n, std::vector<double>(dimensions()));
    std::vector<std::size_t> strata(n);
    for (std::size_t k = 0; k < dimensions(); ++k) {
      for (std::size_t i = 0; i < n; ++i) strata[i] = i;
      for (std::size_t i = n; i > 1; --i) std::swap(strata[i - 1], strata[rng_() % i]);  // Fisher-Yates
      for (std::size_t i = 0; i < n; ++i)
        design_[i][k] = snap(k, (static_cast<double>(strata[i]) + detail::unit_uniform(rng_)) / static_cast<double>(n));
    }
  }

  [[nodiscard]] double snap(std::size_t k, double v) const {
    return levels_[k] ? detail::level_centre(v, levels_[k]) : std::clamp(v, 0.0, 1.0);
  }

  std::vector<double> random_point() {
    std::vector<double> p(dimensions());
    for (std::size_t k = 0; k < p.size(); ++k) p[k] = snap(k, detail::unit_uniform(rng_));
    return p;
  }

  //! options.candidates points, one per column: three quarters uniform over the box (exploration),
  //! a quarter near the incumbent at two radii (EI's maximum is often a small step from it, which
  //! uniform points in 4 dimensions rarely land on).
  Eigen::MatrixXd candidates(const Eigen::VectorXd& incumbent) {
    const auto d = static_cast<Eigen::Index>(dimensions());
    const auto n = static_cast<Eigen::Index>(options_.candidates);
    const Eigen::Index local = n / 4;
    Eigen::MatrixXd c(d, n);
    for (Eigen::Index j = 0; j < n; ++j) {
      const bool near = j >= n - local;
      const double radius = (j % 2) ? 0.05 : 0.2;
      for (Eigen::Index k = 0; k < d; ++k) {
        const auto dim = static_cast<std::size_t>(k);
        const double u = detail::unit_uniform(rng_);
        // A categorical coordinate near the incumbent keeps its level 3 times in 4.
        const bool keep_level = levels_[dim] && u < 0.75;
        double v = u;
        if (near && keep_level) v = incumbent(k);
        else if (near && !levels_[dim]) v = incumbent(k) + radius * (2 * u - 1);
        else if (near) v = detail::unit_uniform(rng_);
        c(k, j) = snap(dim, v);
      }
    }
    return c;
  }

  [[nodiscard]] bool sampled(const double* p) const {
    const std::size_t d = dimensions();
    for (std::size_t i = 0; i < samples(); ++i)
      if (std::equal(p, p + d, xs_.begin() + static_cast<std::ptrdiff_t>(i * d))) return true;
    return false;
  }

  [[nodiscard]] Eigen::MatrixXd sample_matrix() const {
    return Eigen::Map<const Eigen::MatrixXd>(xs_.data(), static_cast<Eigen::Index>(dimensions()),
                                             static_cast<Eigen::Index>(samples()));
  }

  //! Scores shifted and scaled to mean 0, sd 1, so that the grid of signal variances and the
  //! noise floor mean the same thing whatever the units (bytes/s, GB/s, 1/latency).
  [[nodiscard]] Eigen::VectorXd normalised_scores() const {
    Eigen::VectorXd y = Eigen::Map<const Eigen::VectorXd>(ys_.data(), static_cast<Eigen::Index>(samples()));
    const double mean = y.mean();
    const double sd = std::sqrt((y.array() - mean).square().mean());
    y.array() -= mean;
    if (sd > 0) y /= sd;  // all scores equal: leave them at 0, the GP is flat
    return y;
  }

  std::vector<std::size_t> levels_;
  std::vector<std::uint8_t> unordered_;  //!< gp_hyper::unordered: empty unless options.unordered_levels
  bayesian_options options_;
  std::mt19937_64 rng_;
  std::vector<std::vector<double>> design_;  //!< the Latin hypercube, handed out by next() in order
  std::size_t design_cursor_ = 0;
  std::vector<double> xs_;  //!< samples, d doubles each (column-major for Eigen::Map)
  std::vector<double> ys_;  //!< their raw scores
};

}  // namespace tutti::fusion
