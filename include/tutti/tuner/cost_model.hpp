//! @file cost_model.hpp  The alpha-beta-gamma cost of tutti's allreduce schedules, per level.
//!
//! A schedule's time is linear in a few machine parameters: alpha, the cost of one message (s),
//! beta, the cost of one byte on the link (s/B), separately inside a node and between nodes, and
//! gamma, the cost of reducing one byte (s/B). `cost_terms` holds a schedule's coefficients of
//! each, so the same terms serve to predict (`seconds`) and to fit the parameters from measured
//! times (tuner/fit.hpp: a linear least-squares problem). The formulas are Thakur, Rabenseifner and
//! Gropp, "Optimization of Collective Communication Operations in MPICH" (IJHPCA 2005), written for
//! tutti's schedules: docs/tuning.md ("The cost model") derives each one.
//!
//! These are the textbook forms. tuner/schedule_terms.hpp writes the terms of each schedule as
//! tutti runs it (chunk rounds, staging copies, pipelining, contention on a node's link) and
//! tuner/predict.hpp adds the oversubscription term (`s`, `switch_cost`) and answers by name.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "tutti/core/error.hpp"

namespace tutti::tuner {

//! One level's link: seconds per message and seconds per byte.
struct link_cost {
  double alpha = 0;
  double beta = 0;
};

//! How a collective's arguments are checked across ranks before data moves (TUTTI_CHECK,
//! communicator/agreement.hpp): part of every measured time, so part of the model.
enum class argument_check : std::uint8_t {
  exchange,  //!< the communicator sends a 32-byte descriptor to every peer: n - 1 messages (algorithm::direct needs none: its first epoch carries them)
  epoch,     //!< in direct's first synchronisation: one more for any other candidate of a tuned<...> with direct (shm)
  none,      //!< TUTTI_CHECK=0
};

//! What the model is told about the machine rather than fitting it.
struct machine_shape {
  //! Network links per node: ranks of one node that cross to other nodes at once share them
  //! (tuner/schedule_terms.hpp). 1 for namespace hosts, 8 for a DGX H100.
  double node_links = 1;
  //! A core's cache (L2 per core here: 2 MiB) for the cache term (tuner/predict.hpp); 0: none.
  double cache_bytes = 0;
  //! The "network" runs on the nodes' own CPUs (namespace hosts or simulated nodes on one
  //! machine): oversubscription stretches its terms too.
  bool network_on_cpus = false;
  //! With network_on_cpus: the network's links are shaped (tc, 1 Gbit/s here), so they, not the
  //! CPUs, pace its bytes, and a node's ranks crossing at once share them. Without it the bytes
  //! of such a network are CPU copies at both ends (unshaped veth): each end pays on its own level.
  bool links_shaped = false;
  //! With links_shaped: the shaper is a token bucket (tc's tbf) of `bucket_bytes`, and a call
  //! takes max(the unshaped schedule's time, the time its busiest link needs for its bytes)
  //! (cost_terms::link_*, cost_parameters::link; tuner/shaped_link.hpp). Without it a shaped
  //! link's bytes are b_inter, added to the rest (the first model: what tutti-tune's fit does).
  bool token_bucket = false;
  double bucket_bytes = 0;  //!< tbf's burst: "burst 1mbit" is 131072 bytes to tc (1024 * 1024 / 8)
  //! Copies a byte sent as a message inside a node costs: 2 through shared memory (into the
  //! ring's slot and out), 1 over NVLink or RDMA. beta_intra prices a message byte; a one-sided
  //! copy or read (algorithm::direct) costs 1 / message_copies of it.
  double message_copies = 2;
  argument_check check = argument_check::exchange;  //!< how the measured (or predicted) runs checked arguments
};

//! The machine as the model sees it.
struct cost_parameters {
  link_cost intra;   //!< between ranks of one node (shared memory)
  link_cost inter;   //!< between nodes (the network)
  double gamma = 0;  //!< seconds per byte reduced (one element-wise op over the bytes)
  //! Seconds per one-sided synchronisation inside a node (algorithm::direct's epochs: every rank
  //! raises a flag in shared memory and waits for its peers'), where alpha_intra is a two-sided
  //! message (a send into a peer's queue, a receive out of it, a completion each side). See
  //! `cost_terms::e`.
  double alpha_sync = 0;
  //! Seconds per collective call whatever it moves: dispatch, the descriptor, the schedule's
  //! set-up (NCCL's model has the same, its per-collective base latency). See `cost_terms::c`.
  double base_latency = 0;
  //! Seconds a rank loses when the peer it waits for is not running (more ranks than cores: a
  //! scheduler switch), per synchronisation; see `cost_terms::s` and tuner/predict.hpp.
  double switch_cost = 0;
  //! Extra seconds per byte moved or reduced inside a node once the data no longer fits a core's
  //! cache (cost_terms::m; tuner/predict.hpp).
  double memory_beta = 0;
  //! A token-bucket shaped link (machine_shape::token_bucket; tuner/shaped_link.hpp), in seconds
  //! per byte through the busiest node's link: `beta` for bytes the bucket covers (1 / the rate
  //! its tokens come at), `paced_beta` for the bytes of a step beyond the bucket (paced packet by
  //! packet, behind the step's earlier ones), `exchange_beta` for those of schedules whose steps
  //! exchange both ways with one partner and wait for both (halving_doubling, tree).
  struct shaped_link {
    double beta = 0, paced_beta = 0, exchange_beta = 0;
  } link{};
  machine_shape machine{};  //!< given, not fitted
};

//! A schedule's coefficients: time = a_intra alpha_intra + b_intra beta_intra + a_inter alpha_inter
//! + b_inter beta_inter + g gamma + s switch_cost + m memory_beta + e alpha_sync + c base_latency.
struct cost_terms {
  double a_intra = 0, b_intra = 0, a_inter = 0, b_inter = 0, g = 0;
  double s = 0;  //!< synchronisations expected to find their peer descheduled (0 unless oversubscribed)
  double m = 0;  //!< intra bytes moved or reduced out of cache (0 unless the data outgrows it)
  double e = 0;  //!< one-sided synchronisations (epochs) inside a node
  double c = 0;  //!< collective calls (1, or more where a composition calls its parts)
  //! Bytes through the busiest node's token-bucket shaped link (machine_shape::token_bucket): those
  //! each step's bucket covers, those beyond it, and those beyond it in exchange steps
  //! (cost_parameters::shaped_link). Not part of the sum: seconds() takes the larger of the two.
  double link_within = 0, link_paced = 0, link_exchange = 0;

  cost_terms& operator+=(const cost_terms& o) noexcept {
    a_intra += o.a_intra, b_intra += o.b_intra, a_inter += o.a_inter, b_inter += o.b_inter, g += o.g, s += o.s, m += o.m;
    e += o.e, c += o.c;
    link_within += o.link_within, link_paced += o.link_paced, link_exchange += o.link_exchange;
    return *this;
  }
  //! Every coefficient times k (a phase repeated k times).
  friend cost_terms operator*(cost_terms t, double k) noexcept {
    t.a_intra *= k, t.b_intra *= k, t.a_inter *= k, t.b_inter *= k, t.g *= k, t.s *= k, t.m *= k, t.e *= k, t.c *= k;
    t.link_within *= k, t.link_paced *= k, t.link_exchange *= k;
    return t;
  }
  [[nodiscard]] bool on_shaped_link() const noexcept { return link_within > 0 || link_paced > 0 || link_exchange > 0; }
  friend cost_terms operator+(cost_terms a, const cost_terms& b) noexcept { return a += b; }
};

//! Seconds the busiest token-bucket shaped link needs for a call's bytes (0 without one).
[[nodiscard]] inline double link_seconds(const cost_parameters& p, const cost_terms& t) noexcept {
  return t.link_within * p.link.beta + t.link_paced * p.link.paced_beta + t.link_exchange * p.link.exchange_beta;
}

//! The sum of the terms: the schedule's seconds (as if unshaped, on a token-bucket shaped link).
[[nodiscard]] inline double summed_seconds(const cost_parameters& p, const cost_terms& t) noexcept {
  return t.a_intra * p.intra.alpha + t.b_intra * p.intra.beta + t.a_inter * p.inter.alpha +
         t.b_inter * p.inter.beta + t.g * p.gamma + t.s * p.switch_cost + t.m * p.memory_beta + t.e * p.alpha_sync +
         t.c * p.base_latency;
}

//! Predicted seconds: the sum of the terms; on a token-bucket shaped link the larger of that and
//! the link's time (tuner/shaped_link.hpp).
[[nodiscard]] inline double seconds(const cost_parameters& p, const cost_terms& t) noexcept {
  const double sum = summed_seconds(p, t);
  return t.on_shaped_link() ? std::max(sum, link_seconds(p, t)) : sum;
}

//! Which level a phase runs on.
enum class level { intra, inter };

//! The single-level schedules the model knows, by the name of the tutti algorithm they describe.
enum class schedule {
  ring,              //!< reduce-scatter then allgather around a ring (algorithm::ring)
  halving_doubling,  //!< Rabenseifner: recursive halving then doubling (algorithm::halving_doubling)
  binomial_tree,     //!< reduce to a root then broadcast, both binomial (unpipelined tree)
  direct_one_shot,   //!< one-sided: every rank reads every peer's whole buffer (algorithm::direct, small)
  direct_two_shot,   //!< one-sided: each rank reduces its 1/p block, then all read the blocks
};

namespace detail {
inline cost_terms on(level l, double messages, double bytes_moved, double bytes_reduced) noexcept {
  cost_terms t;
  (l == level::intra ? t.a_intra : t.a_inter) = messages;
  (l == level::intra ? t.b_intra : t.b_inter) = bytes_moved;
  t.g = bytes_reduced;
  return t;
}
inline void check(int p, double bytes, const char* what) {
  if (p < 1 || !(bytes >= 0) || !std::isfinite(bytes))
    throw invalid_argument(std::string("tuner::") + what + ": needs ranks >= 1 and a finite byte count >= 0; got ranks " +
                           std::to_string(p) + ", bytes " + std::to_string(bytes));
}
}  // namespace detail

//! Reduce-scatter of `bytes` (the whole vector) over p ranks around a ring: p-1 steps of m/p.
[[nodiscard]] inline cost_terms ring_reduce_scatter_terms(int p, double bytes, level l) {
  detail::check(p, bytes, "ring_reduce_scatter_terms");
  const double f = static_cast<double>(p - 1) / p;
  return detail::on(l, p - 1, f * bytes, f * bytes);
}

//! Allgather of `bytes` (the whole result) over p ranks around a ring.
[[nodiscard]] inline cost_terms ring_allgather_terms(int p, double bytes, level l) {
  detail::check(p, bytes, "ring_allgather_terms");
  const double f = static_cast<double>(p - 1) / p;
  return detail::on(l, p - 1, f * bytes, 0);
}

//! Allreduce of `bytes` over p ranks on one level.
[[nodiscard]] inline cost_terms allreduce_terms(schedule s, int p, double bytes, level l) {
  detail::check(p, bytes, "allreduce_terms");
  if (p == 1) return {};
  const double n = p;
  const double f = (n - 1) / n;
  switch (s) {
    case schedule::ring:
      return ring_reduce_scatter_terms(p, bytes, l) + ring_allgather_terms(p, bytes, l);
    case schedule::halving_doubling: {
      // On the largest power of two p' <= p; the p - p' extra ranks first hand their vector to a
      // partner and get the result back at the end (two more messages of the whole vector).
      const int pow2 = std::bit_floor(static_cast<unsigned>(p));
      const double steps = std::log2(static_cast<double>(pow2));
      const double g = (pow2 - 1.0) / pow2;
      cost_terms t = detail::on(l, 2 * steps, 2 * g * bytes, g * bytes);
      if (pow2 != p) t += detail::on(l, 2, 2 * bytes, bytes);
      return t;
    }
    case schedule::binomial_tree: {
      const double steps = std::ceil(std::log2(n));
      return detail::on(l, 2 * steps, 2 * steps * bytes, steps * bytes);
    }
    case schedule::direct_one_shot:
      // One synchronisation; each rank reads p-1 whole vectors and reduces them.
      return detail::on(l, 1, (n - 1) * bytes, (n - 1) * bytes);
    case schedule::direct_two_shot:
      // Two synchronisations; reads (p-1)/p of the vector twice, reduces its block.
      return detail::on(l, 2, 2 * f * bytes, f * bytes);
  }
  return {};
}

//! algorithm::hierarchical's allreduce over `nodes` x `ranks_per_node`: a ring reduce-scatter
//! inside the node, an allreduce of 1/ppn of the bytes between nodes by `inter`, a ring allgather
//! inside the node.
[[nodiscard]] inline cost_terms hierarchical_allreduce_terms(schedule inter, int nodes, int ranks_per_node, double bytes) {
  detail::check(nodes, bytes, "hierarchical_allreduce_terms");
  detail::check(ranks_per_node, bytes, "hierarchical_allreduce_terms");
  const double share = bytes / ranks_per_node;
  return ring_reduce_scatter_terms(ranks_per_node, bytes, level::intra) +
         allreduce_terms(inter, nodes, share, level::inter) + ring_allgather_terms(ranks_per_node, bytes, level::intra);
}

}  // namespace tutti::tuner
