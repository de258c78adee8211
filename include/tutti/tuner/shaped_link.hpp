//! @file shaped_link.hpp  The bytes a flat schedule puts through a node's token-bucket shaped link, step by step.
//!
//! tc's token bucket filter (`tbf rate R burst B`, here on both ends of each namespace host's
//! link: tests/netns/lib.sh) lets a packet pass as soon as the bucket holds tokens for it; tokens
//! come at R and the bucket holds B. So over a call the link cannot carry more than R per second
//! on average, whatever the schedule — and within that, a call's bytes are not priced per byte on
//! top of its latencies: the bucket fills while the schedule waits for anything else. A call then
//! takes max(the schedule's time as if unshaped, the link's bytes / R), not their sum
//! (cost_model.hpp's seconds(); the sum predicted 8 KiB 25-90 % high on this VM).
//!
//! Where a step's size matters: a step whose bytes on the link exceed B outlasts its tokens and
//! its later bytes lose rate (why: below). Measured here (4 hosts x 1 rank, 1 Gbit/s,
//! tuning/vm-2core-20261126/netns-1gbit.json): ring reaches 119 MB/s at 32-512 KiB (steps of at
//! most 128 KiB = B) and 93 MB/s from 2 MiB on (steps of 512 KiB); halving_doubling and tree, whose
//! steps exchange both ways with one partner and wait for both, reach the same 119 MB/s while their
//! steps fit the bucket and 63 MB/s beyond. So each step's bytes are split: min(step, B) are
//! priced at 1/R (cost_parameters::shaped_link::beta), the rest at paced_beta, or at exchange_beta
//! in halving_doubling's and tree's steps. All three are fitted (tuner/fit_shaped.hpp). Why a
//! paced byte costs more than 1/R was found since (bench/results/ucx-eager-large-20261127): UCX's
//! rendezvous, whose control messages queue behind the other direction's data in the shaped queue;
//! with eager messages (TUTTI_UCX_RNDV_THRESH, default inf from aa3cb62) a ring between 2 hosts
//! reaches the link. So tables measured since should fit eta near 1, and the step size from which
//! bytes lose rate may be rendezvous's threshold as much as the bucket: these tables cannot tell
//! 62.5 KB from 250 KB (docs/tuning.md).
//!
//! Counted per step on the busiest node's link (its outgoing side: every schedule here sends as
//! much as it receives): ring sends one chunk across per step (ranks numbered node by node: one
//! rank of a node talks to the next node); halving_doubling's crossing steps carry the blocks of
//! all of a node's ranks at once (crowd, as schedule_terms.hpp's crowded); tree's busiest rank
//! sends `sends` chunks per steady step and one per tree in each of its D filling steps. Their sum
//! is schedule_terms.hpp's b_inter for a shaped link. Allreduce only (the other collectives have no
//! link terms yet: no formula under this model).
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <string_view>

#include "tutti/core/collective.hpp"
#include "tutti/tuner/cost_model.hpp"
#include "tutti/tuner/schedule_terms.hpp"

namespace tutti::tuner {

//! A flat schedule's ranks as the shaped link sees them.
struct link_shape {
  int ranks = 1;
  int per_node = 1;     //!< >= ranks: one node, no link
  double crowd = 1;     //!< ranks of a node crossing at once per link (flat_shape::crowd with the link shaped)
  double flows = 1;     //!< the schedule runs this many times at once per node (hierarchical's q inter allreduces)
  double bucket = 0;    //!< machine_shape::bucket_bytes
};

namespace detail {
//! `count` steps of `bytes` each on the link: the bucket covers min(bytes, bucket) of each.
inline void link_steps(cost_terms& t, double bytes, double count, double bucket, bool exchange) noexcept {
  const double within = std::min(bytes, bucket), beyond = bytes - within;
  t.link_within += count * within;
  (exchange ? t.link_exchange : t.link_paced) += count * beyond;
}
}  // namespace detail

//! The link terms of flat `algorithm` ("ring", "halving_doubling", "tree") for collective `c` of S
//! bytes in all over `sh`: zero on one node; across nodes nullopt for another algorithm or collective.
[[nodiscard]] inline std::optional<cost_terms> flat_link_terms(std::string_view algorithm, collective c, const link_shape& sh,
                                                               double S, const schedule_settings& set = {}) {
  cost_terms t;
  if (sh.ranks <= 1 || sh.per_node >= sh.ranks) return t;  // one node: no link
  const bool known = algorithm == "ring" || algorithm == "halving_doubling" || algorithm == "tree";
  if (c != collective::allreduce || !known) return std::nullopt;
  const int n = sh.ranks;
  const double flows = sh.flows, bucket = sh.bucket;
  if (algorithm == "ring") {  // 2 (n - 1) steps per round of one chunk of the segment
    const double rounds = detail::rounds_of(S / n, set.chunk_bytes);
    detail::link_steps(t, flows * S / n / rounds, 2.0 * (n - 1) * rounds, bucket, false);
  } else if (algorithm == "halving_doubling") {  // as schedule_terms.hpp's halving_steps, crossing steps only
    const int p = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
    const double rounds = detail::rounds_of(S, p * set.chunk_bytes), slice = S / rounds;
    double moved = slice;
    for (int m = p / 2; m >= 1; m /= 2) {
      moved /= 2;
      if (static_cast<double>(m) * n / p >= sh.per_node) detail::link_steps(t, flows * sh.crowd * moved, 2 * rounds, bucket, true);
    }
    if (p != n && sh.per_node < 2) detail::link_steps(t, flows * slice, 2 * rounds, bucket, true);  // the fold-in crosses
  } else {  // tree, as schedule_terms.hpp's: tk - 1 steady steps of `sends` chunks, D filling ones of a chunk per tree
    const double D = std::floor(std::log2(static_cast<double>(n)));
    const auto [trees, tk, tc, sends] = detail::tree_allreduce_pipeline(n, S, set);
    detail::link_steps(t, flows * sends * tc, tk - 1, bucket, true);
    detail::link_steps(t, flows * trees * tc, D, bucket, true);
  }
  return t;
}

}  // namespace tutti::tuner
