//! @file sweep.hpp  tutti-tune's measuring loop: interleaved repeats over (collective, dtype) series,
//! sizes and contenders, each point's median and spread, iterations scaled to the point, a time
//! budget, and a progress line.
//!
//! Every rank runs the same loop and takes every decision from numbers all ranks share (each
//! rep time and each budget check is the largest over ranks, agreed with an allreduce), so every
//! rank forces the same contender at the same point of its call sequence, and all record the
//! same table. The order is: for each repeat, for each series, for each size, for each contender
//! (starting at contender `repeat mod count`): warm-up, barrier, a timed loop of k calls. Interleaving the repeats spreads slow moments of the
//! machine (another process, a frequency change) over every contender rather than onto one.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "comm.hpp"
#include "contenders.hpp"
#include "options.hpp"
#include "tutti/core/collective.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/tuner/choose.hpp"
#include "tutti/tuner/table.hpp"

namespace tune {

using tutti::tuner::bytes_text;

//! One measured point: each repeat's time per call (us; the largest over ranks of each rank's
//! mean over the timed loop) and the loop's iteration count (fixed after the first repeat).
struct point {
  std::vector<double> rep_us;
  int iters = 0;
  std::uint32_t ran = table_choice;  //!< the table_choice contender's: the candidate the table ran
};

//! One (collective, dtype) of the sweep: its contenders and every point it measured.
struct series {
  tutti::collective collective = tutti::collective::allreduce;
  tutti::dtype type = tutti::dtype::f32;
  std::vector<contender> contenders;
  std::vector<std::uint64_t> sizes;  //!< what it measures; cut when the budget says so
  std::vector<std::vector<point>> points;  //!< [size][contender]
  std::uint64_t cut_from = 0;  //!< the first size dropped by the budget (0: none)
};

[[nodiscard]] inline double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
//! The interquartile range (p75 - p25, linear between ranks): robust to one disturbed repeat,
//! which max - min is not (one repeat slowed by a neighbour would hide every real difference).
[[nodiscard]] inline double spread_of(std::vector<double> v) {
  if (v.size() < 2) return 0;
  std::sort(v.begin(), v.end());
  const auto quantile = [&](double q) {
    const double at = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(at);
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
  };
  return quantile(0.75) - quantile(0.25);
}

//! nccl-tests' bus bandwidth (GB/s) for `bytes` as the table counts them (per rank for
//! reduce_scatter and allgather, per block for alltoall) over `n` ranks: algbw of the whole
//! buffer times the collective's bus factor.
[[nodiscard]] inline double busbw_gbs(tutti::collective c, std::uint64_t bytes, int n, double us) {
  using tutti::collective;
  if (us <= 0) return 0;
  const double nn = n;
  const bool per_rank = c == collective::reduce_scatter || c == collective::allgather || c == collective::alltoall;
  const double total = static_cast<double>(bytes) * (per_rank ? nn : 1.0);
  const double factor = c == collective::allreduce ? 2 * (nn - 1) / nn : per_rank ? (nn - 1) / nn : 1.0;
  return total / us / 1e3 * factor;
}

//! What the sweep did, for the provenance: repeats, sizes cut, an early stop.
struct sweep_report {
  int reps_planned = 0;
  int reps_done = 0;  //!< complete repeats
  bool stopped_early = false;
  double seconds = 0;
  std::string text;
};

class sweep {
 public:
  sweep(tune_comm& comm, const options& o, std::vector<series>& all)
      : comm_(comm), o_(o), all_(all), leader_(comm.rank() == 0) {
    std::size_t in = 0, out = 0;
    const auto n = static_cast<std::size_t>(comm.size());
    for (auto& s : all) {
      s.points.assign(s.sizes.size(), std::vector<point>(s.contenders.size()));
      const std::size_t big = s.sizes.empty() ? 0 : s.sizes.back();
      const bool in_n = s.collective == tutti::collective::reduce_scatter || s.collective == tutti::collective::alltoall;
      const bool out_n = s.collective == tutti::collective::allgather || s.collective == tutti::collective::alltoall;
      in = std::max(in, big * (in_n ? n : 1));
      out = std::max(out, big * (out_n ? n : 1));
    }
    in_.assign(std::max<std::size_t>(in, 64), std::byte{0});  // zeros: valid in every dtype, no denormals
    out_.assign(std::max<std::size_t>(out, 64), std::byte{0});
  }

  sweep_report run() {
    start_ = clock::now();
    sweep_report r;
    r.reps_planned = o_.reps;
    const double rep0_share = o_.budget_s / std::min(o_.reps, 3) / static_cast<double>(all_.size());
    for (int rep = 0; rep < r.reps_planned; ++rep) {
      for (std::size_t k = 0; k < all_.size() && !r.stopped_early; ++k) {
        series& s = all_[k];
        const double series_start = agreed_elapsed();
        for (std::size_t i = 0; i < s.sizes.size(); ++i) {
          const double now = i || rep == 0 ? agreed_elapsed() : series_start;
          // The first repeat keeps room for the others (at least min(reps, 3) in the budget):
          // past its share, the larger sizes of this series are dropped.
          if (rep == 0 && i > 0 && now - series_start > rep0_share) {
            s.cut_from = s.sizes[i];
            s.sizes.resize(i);
            s.points.resize(i);
            break;
          }
          // Later repeats stop at the budget once every point has two (a spread needs two).
          if (rep >= 2 && now > o_.budget_s) {
            r.stopped_early = true;
            break;
          }
          // Each repeat starts at another contender: the first after a size change meets colder
          // caches and staging buffers (tutti-tune --versus saw tuned, always first, 10 % behind
          // the same algorithm forced at 8 MiB on shm), and no contender should always be it.
          const std::size_t m = s.contenders.size();
          for (std::size_t k = 0; k < m; ++k) {
            const std::size_t j = (k + static_cast<std::size_t>(rep)) % m;
            if (s.contenders[j].measured_at(s.sizes[i])) measure(s, i, j, rep, r.reps_planned);
          }
        }
      }
      if (r.stopped_early) break;
      r.reps_done = rep + 1;
      if (rep == 0) {  // the plan: as many repeats as the budget holds, at least min(reps, 2)
        const double first = agreed_elapsed();
        const int fit = first > 0 ? static_cast<int>(o_.budget_s / first) : o_.reps;
        r.reps_planned = std::clamp(fit, std::min(o_.reps, 2), o_.reps);
        rep_seconds_ = first;
      }
    }
    comm_.release();
    r.seconds = agreed_elapsed();
    if (leader_ && progress_shown_) std::fprintf(stderr, "%s", tty_ ? "\n" : "");
    r.text = describe(r);
    return r;
  }

 private:
  using clock = std::chrono::steady_clock;

  [[nodiscard]] double elapsed() const { return std::chrono::duration<double>(clock::now() - start_).count(); }
  //! The largest elapsed time over ranks: a budget decision every rank takes alike.
  double agreed_elapsed() {
    double t[1] = {elapsed()};
    comm_.max_over_ranks(t);
    return t[0];
  }

  //! Every later call runs contender `c`: its candidate forced, or the table's choice.
  void run_as(const contender& c) {
    if (c.candidate == table_choice)
      comm_.release();
    else
      comm_.force(c.candidate, c.made.get());
  }

  void measure(series& s, std::size_t i, std::size_t j, int rep, int reps) {
    const contender& c = s.contenders[j];
    point& p = s.points[i][j];
    const std::size_t count = s.sizes[i] / tutti::size_of(s.type);
    run_as(c);
    auto call = [&] { comm_.call(s.collective, in_.data(), out_.data(), count, s.type); };
    for (int w = 0; w < o_.warmup; ++w) call();
    if (p.iters == 0) {  // calibrate: one timed call, the slowest rank's, sets the loop's length
      const auto t0 = clock::now();
      call();
      double t[1] = {std::chrono::duration<double>(clock::now() - t0).count()};
      comm_.max_over_ranks(t);
      const double want = o_.target_ms * 1e-3 / std::max(t[0], 1e-9);
      p.iters = static_cast<int>(std::clamp(std::ceil(want), 1.0, static_cast<double>(o_.max_iters)));
      run_as(c);
    }
    comm_.barrier();
    const auto t0 = clock::now();
    for (int k = 0; k < p.iters; ++k) call();
    double t[1] = {std::chrono::duration<double, std::micro>(clock::now() - t0).count() / p.iters};
    if (c.candidate == table_choice) p.ran = comm_.last_run();  // before max_over_ranks runs candidate 0
    comm_.max_over_ranks(t);
    p.rep_us.push_back(t[0]);
    show(s, i, c, rep, reps);
  }

  //! Rank 0's progress: a line rewritten with \r on a terminal; under a launcher (whose pipes
  //! pass whole lines) a line every few seconds.
  void show(const series& s, std::size_t i, const contender& c, int rep, int reps) {
    if (!leader_) return;
    const double now = elapsed();
    if (now - last_shown_ < (tty_ ? 0.25 : 5.0)) return;
    last_shown_ = now;
    progress_shown_ = true;
    std::string eta = "first repeat";
    if (rep_seconds_ > 0) {
      const double left = std::max(0.0, rep_seconds_ * reps - now);
      eta = "about " + std::to_string(static_cast<long>(left + 0.5)) + " s left";
    }
    std::fprintf(stderr, "%stutti-tune: repeat %d/%d  %s %s %s  %s  %.0f s, %s%s", tty_ ? "\r" : "", rep + 1, reps,
                 std::string(tutti::name_of(s.collective)).c_str(), std::string(tutti::name_of(s.type)).c_str(),
                 bytes_text(s.sizes[i]).c_str(), c.label().c_str(), now, eta.c_str(), tty_ ? "\033[K" : "\n");
    std::fflush(stderr);
  }

  [[nodiscard]] std::string describe(const sweep_report& r) const {
    std::string t = "interleaved repeats: " + std::to_string(r.reps_done) + " complete of " + std::to_string(o_.reps) +
                    " asked" + (r.reps_planned < o_.reps ? " (the budget of " + std::to_string(static_cast<long>(o_.budget_s)) +
                                                               " s held " + std::to_string(r.reps_planned) + ")"
                                                         : std::string()) +
                    (r.stopped_early ? ", stopped at the budget during repeat " + std::to_string(r.reps_done + 1) : "") +
                    "; each repeat a timed loop of ~" + std::to_string(static_cast<long>(o_.target_ms)) +
                    " ms after " + std::to_string(o_.warmup) + " warm-up call(s), its time per call the slowest rank's";
    for (const auto& s : all_)
      if (s.cut_from)
        t += "; " + std::string(tutti::name_of(s.collective)) + " " + std::string(tutti::name_of(s.type)) +
             ": sizes from " + bytes_text(s.cut_from) + " not measured (budget)";
    return t;
  }

  tune_comm& comm_;
  const options& o_;
  std::vector<series>& all_;
  bool leader_;
  bool tty_ = isatty(2) == 1;
  bool progress_shown_ = false;
  double last_shown_ = -1e9;
  double rep_seconds_ = 0;
  clock::time_point start_;
  std::vector<std::byte> in_, out_;
};

}  // namespace tune
