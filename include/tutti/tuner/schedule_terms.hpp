//! @file schedule_terms.hpp  The alpha-beta-gamma terms of each flat tutti schedule as tutti runs it, per collective.
//!
//! tuner/cost_model.hpp has the textbook forms (Thakur, Rabenseifner and Gropp); these follow the
//! code: ring and halving_doubling repeat their whole schedule once per round of chunk_bytes per
//! segment (each round pays its messages again), tree is pipelined (2D + k - 1 steps of a chunk),
//! direct copies into its stage before peers read it and goes stage by stage, and on several nodes
//! each step is charged on the level its partner is on. The headers of algorithm/ring.hpp,
//! tree.hpp, halving_doubling.hpp and direct.hpp state the same costs beside the code.
//!
//! Ranks are taken as numbered node by node (tutti-run, the node map and hierarchical's groups
//! all do). A step in which every rank of a node talks to another node puts `per_node` flows on
//! the node's `links` network links: its inter-node bytes are multiplied by per_node / links.
//! `S` is always the whole vector: allreduce/broadcast/reduce's buffer, n blocks for
//! reduce_scatter, allgather and alltoall (tuner/predict.hpp converts from a table's bytes).
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <string_view>

#include "tutti/core/collective.hpp"
#include "tutti/tuner/cost_model.hpp"
#include "tutti/tuner/direct.hpp"
#include "tutti/tuner/halving_doubling.hpp"
#include "tutti/tuner/pipeline.hpp"

namespace tutti::tuner {

//! What a schedule's shape depends on besides the layout: the run-time tuning values and the stage.
struct schedule_settings {
  double chunk_bytes = static_cast<double>(pipeline_tuning{}.chunk_bytes);  //!< TUTTI_CHUNK_BYTES
  //! transport::shm's stage (TUTTI_SHM_STAGE_BYTES, default in transport/shm/options.hpp; tuner/
  //! may not include transport/, so the default is repeated here).
  double stage_bytes = double(1 << 20);
  //! Bytes per element: hierarchical cuts the count into whole blocks per rank (tuner/predict.hpp).
  //! A table's float samples are fp32 (tutti-tune measures float).
  double element_bytes = 4;
  direct_tuning direct{};
  halving_doubling_tuning halving_doubling{};
};

//! n ranks, `per_node` of them on each node (per_node >= ranks: one node), `links` network links per node.
struct flat_shape {
  int ranks = 1;
  int per_node = 1;
  double links = 1;
  double message_copies = 2;  //!< machine_shape::message_copies
  bool network_on_cpus = false;  //!< machine_shape::network_on_cpus
  bool links_shaped = false;     //!< machine_shape::links_shaped
  //! The network's bytes are copies by the CPUs at both ends, with no link to pace or share.
  [[nodiscard]] bool bytes_on_cpus() const noexcept { return network_on_cpus && !links_shaped; }
  [[nodiscard]] bool one_node() const noexcept { return per_node >= ranks; }
  [[nodiscard]] level flat_level() const noexcept { return one_node() ? level::intra : level::inter; }
  //! Inter-node bytes factor when every rank of a node crosses at once (none without a link to
  //! share: then it is the CPUs that are shared, which oversubscription prices).
  [[nodiscard]] double crowd() const noexcept { return bytes_on_cpus() ? 1 : std::max(1.0, per_node / std::max(1.0, links)); }
};

namespace detail {
inline double rounds_of(double bytes, double unit) noexcept { return std::max(1.0, std::ceil(bytes / std::max(1.0, unit))); }
inline double log2_ceil(int n) noexcept { return std::ceil(std::log2(static_cast<double>(n))); }
//! An inter-level phase whose bytes go `crowd` times through a node's links.
inline cost_terms crowded(cost_terms t, double crowd) noexcept {
  t.b_inter *= crowd;
  return t;
}

//! Pairwise exchange (algorithm/alltoall.hpp), shared by every algorithm: n-1 steps of one block.
inline cost_terms pairwise_alltoall(const flat_shape& sh, double S) {
  const double n = sh.ranks;
  return crowded(on(sh.flat_level(), n - 1, (n - 1) / n * S, 0), sh.one_node() ? 1 : sh.crowd());
}

//! A flat schedule's step on several nodes. With a NIC the crossing link sets the pace: the whole
//! step is charged between nodes. When the network is the nodes' own CPUs (machine_shape::
//! network_on_cpus), a message costs its ends CPU time on its own level, so only the share
//! `crossing` of the messages that do cross is charged between nodes, the rest inside; and so of
//! the bytes too, unless a link paces them (machine_shape::links_shaped).
inline cost_terms on_levels(const flat_shape& sh, double crossing, double messages, double bytes, double reduced) noexcept {
  if (sh.one_node() || !sh.network_on_cpus) return on(sh.flat_level(), messages, bytes, reduced);
  const bool cpu_bytes = sh.bytes_on_cpus();
  cost_terms t = on(level::inter, crossing * messages, cpu_bytes ? crossing * bytes : bytes, reduced);
  t.a_intra = (1 - crossing) * messages, t.b_intra = cpu_bytes ? (1 - crossing) * bytes : 0;
  return t;
}
//! Ring: with q >= 2 ranks per node each rank sends on one level and receives on the other.
inline cost_terms ring_steps(const flat_shape& sh, double messages, double bytes, double reduced) noexcept {
  return on_levels(sh, sh.per_node >= 2 ? 0.5 : 1, messages, bytes, reduced);
}
//! Tree: an edge at level j joins labels p / 2^j apart (p = bit_floor(n)), which are on different
//! nodes of q ranks for a share min(1, (p / 2^j) / q) of them; the mean over the D levels.
inline double tree_crossing(const flat_shape& sh) noexcept {
  const double p = std::bit_floor(static_cast<unsigned>(sh.ranks)), D = std::floor(std::log2(static_cast<double>(sh.ranks)));
  double sum = 0;
  for (double h = p / 2; h >= 1; h /= 2) sum += std::min(1.0, h / std::max(1, sh.per_node));
  return D > 0 ? sum / D : 1;
}

inline std::optional<cost_terms> ring(collective c, const flat_shape& sh, double S, const schedule_settings& set) {
  const int n = sh.ranks;
  const double f = (n - 1.0) / n;
  const level l = sh.flat_level();
  const double rounds = rounds_of(S / n, set.chunk_bytes);
  switch (c) {
    case collective::allreduce: return ring_steps(sh, 2.0 * (n - 1) * rounds, 2 * f * S, f * S);
    case collective::reduce_scatter: return ring_steps(sh, (n - 1.0) * rounds, f * S, f * S);
    case collective::allgather: return ring_steps(sh, (n - 1.0) * rounds, f * S, 0);
    case collective::broadcast:
    case collective::reduce: {  // a pipelined chain of n - 1 hops: n - 2 + k steps of one chunk
      const double k = rounds_of(S, set.chunk_bytes), steps = n - 2.0 + k;
      return on(l, steps, steps * S / k, c == collective::reduce ? steps * S / k : 0);
    }
    case collective::barrier: return on(l, n - 1.0, 0, 0);
    case collective::alltoall: return pairwise_alltoall(sh, S);
  }
  return std::nullopt;
}

//! Recursive halving (then doubling) on p = bit_floor(n) virtual ranks, each step on the level of
//! its partner (distance m virtual ranks = about m n / p real ones), plus the fold-in of n - p
//! ranks with their neighbour. `both`: halving and doubling (allreduce), else one of them.
inline cost_terms halving_steps(const flat_shape& sh, double S, double reduced_share, bool both) {
  const int n = sh.ranks, p = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
  cost_terms t;
  double moved = S;
  for (int m = p / 2; m >= 1; m /= 2) {
    moved /= 2;
    const bool inter = !sh.one_node() && static_cast<double>(m) * n / p >= sh.per_node;
    t += crowded(on(inter ? level::inter : level::intra, both ? 2 : 1, (both ? 2 : 1) * moved, reduced_share * moved),
                 inter ? sh.crowd() : 1);
  }
  return t;
}

inline std::optional<cost_terms> halving_doubling(collective c, const flat_shape& sh, double S, const schedule_settings& set) {
  const int n = sh.ranks, p = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
  const bool fold = p != n;
  const level pair = sh.one_node() || sh.per_node >= 2 ? level::intra : level::inter;  // ranks 2i, 2i+1
  const double rounds = rounds_of(S, p * set.chunk_bytes), slice = S / rounds;
  const auto& hd = set.halving_doubling;
  switch (c) {
    case collective::allreduce: {
      cost_terms t = halving_steps(sh, slice, 1, true);
      if (fold) t += on(pair, 2, 2 * slice, slice);
      return t * rounds;
    }
    case collective::reduce_scatter: {
      cost_terms t = halving_steps(sh, slice, 1, false);
      if (fold) t += on(pair, 2, slice + slice / n, slice);
      return t * rounds;
    }
    case collective::allgather: {
      cost_terms t = halving_steps(sh, S, 0, false);
      if (fold) t += on(pair, 2, S / n + S, 0);
      return t;
    }
    case collective::broadcast:
      if (S < static_cast<double>(hd.scatter_broadcast_bytes)) return on(sh.flat_level(), log2_ceil(n), log2_ceil(n) * S, 0);
      return on(sh.flat_level(), 2 * log2_ceil(n), 2.0 * (n - 1) / n * S, 0);  // van de Geijn
    case collective::reduce:
      if (S <= static_cast<double>(hd.tree_reduce_bytes)) return on(sh.flat_level(), log2_ceil(n), log2_ceil(n) * S, log2_ceil(n) * S);
      return on(sh.flat_level(), 2 * std::log2(p) * rounds + (fold ? rounds : 0), 2.0 * (p - 1) / p * S + (fold ? S : 0),
                (p - 1.0) / p * S + (fold ? S : 0));
    case collective::barrier: return on(sh.flat_level(), log2_ceil(n), 0, 0);
    case collective::alltoall:
      if (n >= 3 && S / n <= static_cast<double>(hd.bruck_block_bytes))
        return crowded(on(sh.flat_level(), log2_ceil(n), n / 2.0 * log2_ceil(n) * S / n, 0), sh.one_node() ? 1 : sh.crowd());
      return pairwise_alltoall(sh, S);
  }
  return std::nullopt;
}

//! tree's allreduce pipeline on n ranks (see tree() below): the trees carrying data, the chunks per
//! tree, a chunk's bytes, and the chunks the busiest rank sends in a steady step.
struct tree_pipeline {
  double trees, chunks, chunk, sends;
};
inline tree_pipeline tree_allreduce_pipeline(int n, double S, const schedule_settings& set) noexcept {
  const bool one_tree = S <= 64;
  const double trees = one_tree ? 1 : 2, tk = one_tree ? rounds_of(S, set.chunk_bytes) : rounds_of(S / 2, set.chunk_bytes);
  const double sends = one_tree ? std::min(n - 1.0, 3.0) : std::min(static_cast<double>(n), 4.0);
  return {trees, tk, S / trees / tk, sends};
}

//! The pipelined double binary tree: each tree carries S/2 in k chunks of c; depth D.
inline std::optional<cost_terms> tree(collective c, const flat_shape& sh, double S, const schedule_settings& set) {
  const int n = sh.ranks;
  const double D = std::floor(std::log2(static_cast<double>(n)));
  const double k = rounds_of(S / 2, set.chunk_bytes), ch = S / 2 / k;
  const level l = sh.flat_level();
  switch (c) {
    case collective::allreduce: {
      // 2D + k - 1 steps per tree: a chunk climbs D levels and descends D while later ones follow.
      // The cut between the trees is kept on a 64-byte line, so up to 64 B only tree 0 carries
      // data. Through shared memory a message's cost is its ends' CPU time, and a rank handles
      // each tree's messages in turn: alpha_intra is paid per tree and step (measured here, 2
      // ranks: 1.0 us at 32 B on one tree, 1.5 at 128 B on two); a network's latency is paid
      // once per step, both trees' messages in flight at once (namespace hosts, 4 x 2 x 2:
      // 59 us at 32 B, 67 at 128 B). In the
      // k - 1 steps where both directions run, the busiest rank sends `sends` chunks (up in both
      // trees, down to its children in the one where it is interior: 4 from 4 ranks on, 3 on 3,
      // 2 on 2, where each rank is one tree's root and the other's leaf) and reduces `reduces`
      // (its children's: 2, or 1 on 2 ranks); in the D of filling and draining one chunk's time
      // per tree. Measured: tree / ring at 4 ranks 1.45 at 1 MiB (k = 1; the model: 1.33), 1.37
      // at 64 MiB (1.33); at 2 ranks 1.09 at 8 MiB (1.0).
      const auto [trees, tk, tc, sends] = tree_allreduce_pipeline(n, S, set);
      const double reduces = std::min(n - 1.0, 2.0);
      cost_terms t = on_levels(sh, tree_crossing(sh), trees * (2 * D + tk - 1), sends * tc * (tk - 1) + trees * D * tc,
                               reduces * tc * (tk + D - 1));
      t.a_inter /= trees;  // the network's latency: both trees' messages are in flight at once
      return t;
    }
    case collective::broadcast: return on(l, D + k, 2 * ch * (D + k), 0);  // + the hop root -> v = 1
    case collective::reduce: return on(l, D + k, 2 * ch * (D + k), 2 * ch * (D + k));
    case collective::barrier: return on(l, 2 * D, 0, 0);
    case collective::alltoall: return pairwise_alltoall(sh, S);
    default: return std::nullopt;  // tree has no reduce_scatter or allgather
  }
}

//! direct's epochs, copies and reads (each a byte copied once) and reductions.
inline std::optional<cost_terms> direct_copies(collective c, const flat_shape& sh, double S, const schedule_settings& set) {
  const double n = sh.ranks, f = (n - 1) / n, K = set.stage_bytes;
  const double epochs = rounds_of(S, K);
  switch (c) {
    case collective::allreduce:
      if (S <= static_cast<double>(set.direct.one_shot_bytes) && S <= K)  // copy in, read and reduce every peer's
        return on(level::intra, 1, S + (n - 1) * S, (n - 1) * S);
      // two-shot per stage: copy in, reduce this rank's 1/n from every peer, read every segment; a last "done" round
      return on(level::intra, 2 * epochs + 1, S + 2 * f * S, f * S);
    case collective::reduce_scatter: return on(level::intra, epochs + 1, 2 * f * S, f * S);
    case collective::allgather: return on(level::intra, rounds_of(S / n, K) + 1, S, 0);
    case collective::broadcast: return on(level::intra, epochs + 1, 2 * S, 0);
    case collective::reduce: return on(level::intra, epochs + 1, n * S, (n - 1) * S);
    case collective::barrier: return on(level::intra, 1, 0, 0);
    case collective::alltoall: return on(level::intra, n, f * S * 2, 0);  // the check's epoch, then pairwise with a copy in and out
  }
  return std::nullopt;
}

//! One-sided over shared memory: one node only. Every epoch is one synchronisation, priced by
//! alpha_sync (a flag each rank raises and polls), not alpha_intra (a message). beta_intra is the
//! cost of a byte sent as a message, which through shared memory is two copies (into the ring's
//! slot, out of it); direct copies or reads a byte once: 1 / message_copies of it.
inline std::optional<cost_terms> direct(collective c, const flat_shape& sh, double S, const schedule_settings& set) {
  if (!sh.one_node()) return std::nullopt;
  const auto t = direct_copies(c, sh, S, set);
  if (!t) return t;
  cost_terms one_sided;
  one_sided.e = t->a_intra;
  one_sided.b_intra = t->b_intra / std::max(1.0, sh.message_copies);
  one_sided.g = t->g;
  return one_sided;
}
}  // namespace detail

//! The terms of flat algorithm `algorithm` ("ring", "halving_doubling", "tree", "direct") for
//! collective `c` of S bytes in all (see the file comment) over `sh`; nullopt when there is no
//! such algorithm or it lacks `c` (tree: reduce_scatter, allgather) or cannot run there (direct
//! across nodes).
[[nodiscard]] inline std::optional<cost_terms> flat_schedule_terms(std::string_view algorithm, collective c, const flat_shape& sh,
                                                                   double S, const schedule_settings& set = {}) {
  detail::check(sh.ranks, S, "flat_schedule_terms");
  if (sh.ranks == 1) return cost_terms{};
  if (algorithm == "ring") return detail::ring(c, sh, S, set);
  if (algorithm == "halving_doubling") return detail::halving_doubling(c, sh, S, set);
  if (algorithm == "tree") return detail::tree(c, sh, S, set);
  if (algorithm == "direct") return detail::direct(c, sh, S, set);
  return std::nullopt;
}

}  // namespace tutti::tuner
