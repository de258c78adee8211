//! @file predict.hpp  The cost model by algorithm name: the terms and the predicted time of any candidate tutti-tune measures.
//!
//! A tuning table names algorithms as tutti does ("ring", "direct", "tree", "halving_doubling",
//! "hierarchical<direct, ring>", nested ones too); `terms_of` maps such a name, a collective, a
//! layout and a size to the schedule's cost_terms (tuner/schedule_terms.hpp for the flat ones,
//! composed here for hierarchical), with the oversubscription term; `predicted_seconds` prices
//! them with fitted parameters. The same mapping serves fitting (tuner/fit_table.hpp) and
//! predicting (tuner/interpolate.hpp, beyond the measured layouts), so the two cannot disagree.
//!
//! Oversubscription (more ranks on a node than cores for them, as 3 or 4 ranks on this 2-core VM):
//! with q ranks on c < q cores only c run at a time, so work every rank does in parallel on its
//! node's CPUs — copying through shared memory (intra alpha and beta), one-sided epochs
//! (alpha_sync), the call itself (base_latency) and reducing (gamma) — stretches by q / c; and a
//! rank that waits for a peer finds it descheduled with probability 1 - c / q (the share of the
//! node's ranks not running at a given moment) and then waits for a scheduler switch,
//! `switch_cost` seconds, fitted. So with o = max(1, q / c):
//!   t = o (a_intra alpha_intra + b_intra beta_intra + g gamma + e alpha_sync + c base_latency)
//!       + a_inter alpha_inter + b_inter beta_inter + (a_intra + a_inter + e)(1 - 1/o) switch_cost.
//! Network terms are not stretched: a NIC moves bytes whether or not its rank is running — unless
//! the "network" is the same CPUs (namespace hosts, simulated nodes: machine_shape::network_on_cpus;
//! its bytes then only where no shaped link paces them, machine_shape::links_shaped). A token-bucket
//! shaped link (machine_shape::token_bucket) keeps the unshaped terms and adds the link's bytes
//! beside them (tuner/shaped_link.hpp): a call takes the larger of the two (cost_model.hpp's seconds).
//! docs/tuning.md ("The cost model") has the measurements behind this.
//!
//! The cache term: copies and reductions run at cache speed while what a rank touches fits its
//! core's cache and at memory speed beyond (this VM: 4.6 GB/s busbw at 256 KiB, 2.2 from 16 MiB,
//! 2 ranks). A rank touches about 3 S (its input, its output, and the stage or scratch or peer
//! data passing through), so the share of intra bytes and reductions that spill is
//! max(0, 1 - cache / (3 S)) with cache = cache_bytes per core (shared by the ranks on a core when
//! oversubscribed); they cost memory_beta more per byte (fitted).
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "tutti/core/collective.hpp"
#include "tutti/tuner/cost_model.hpp"
#include "tutti/tuner/knobs.hpp"
#include "tutti/tuner/schedule_terms.hpp"
#include "tutti/tuner/shaped_link.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::tuner {

//! The parts of "outer<first, second>" (split at the top-level comma), or nullopt.
struct composed_parts {
  std::string_view outer, first, second;
};
[[nodiscard]] inline std::optional<composed_parts> split_composed_name(std::string_view name) noexcept {
  const auto open = name.find('<');
  if (open == std::string_view::npos || name.back() != '>') return std::nullopt;
  int depth = 0;
  for (std::size_t i = open + 1; i + 1 < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    else if (name[i] == '>') --depth;
    else if (name[i] == ',' && depth == 0) {
      auto trim = [](std::string_view s) {
        while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
        while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
        return s;
      };
      return composed_parts{name.substr(0, open), trim(name.substr(open + 1, i - open - 1)),
                            trim(name.substr(i + 1, name.size() - i - 2))};
    }
  }
  return std::nullopt;
}

//! The schedule settings a row's or sample's tuning values make (defaults for the rest).
//! Throws invalid_argument for an unknown value, as a table's reader does.
[[nodiscard]] inline schedule_settings settings_of(std::span<const tuning_value> tuning) {
  schedule_settings set;
  if (tuning.empty()) return set;
  const overrides o = make_overrides(tuning, "tuner::settings_of: ");
  if (const auto* d = o.find<direct_tuning>()) set.direct = *d;
  if (const auto* h = o.find<halving_doubling_tuning>()) set.halving_doubling = *h;
  return set;
}

//! Ranks on the busiest node: ranks_per_node, or world / nodes rounded up when nodes are uneven.
[[nodiscard]] inline int ranks_on_a_node(const layout& where) noexcept {
  if (where.ranks_per_node > 0) return where.ranks_per_node;
  const int nodes = where.nodes > 0 ? where.nodes : 1;
  return (where.world + nodes - 1) / nodes;
}

//! Ranks of a node that compete for its cores during long (bandwidth-bound) phases: all of them,
//! except that halving_doubling on a number of ranks that is not a power of two has n - p of them
//! sitting out its power-of-two phase: a waiting rank polls a while and then sleeps, so in long
//! phases they leave the cores to the others, while in short ones they still compete (measured
//! here, 3 ranks on 2 cores: at 64 MiB halving_doubling takes 1.12x ring's time, where 3 competing
//! ranks would predict 2.25x; at 16 B it takes 3.8x its 2-rank time, as ring does).
[[nodiscard]] inline double competing_ranks(std::string_view algorithm, const layout& where) noexcept {
  const int q = ranks_on_a_node(where);
  if (where.nodes == 1)
    while (const auto parts = split_composed_name(algorithm)) algorithm = parts->first;  // one node: Intra runs
  return algorithm == "halving_doubling" ? static_cast<double>(std::bit_floor(static_cast<unsigned>(q))) : q;
}

//! Adds the oversubscription term to a schedule's terms (see the file comment): the messages'
//! terms by all ranks of the node, the bytes' terms by the `busy` ones (competing_ranks); cores
//! <= 0: unknown, none.
[[nodiscard]] inline cost_terms oversubscribed(cost_terms t, double ranks_per_node, double cores_per_node, double busy = 0,
                                               bool network_on_cpus = false, bool links_shaped = false) noexcept {
  if (!(cores_per_node > 0) || ranks_per_node <= cores_per_node) return t;
  const double o = ranks_per_node / cores_per_node;
  const double ob = std::max(1.0, (busy > 0 ? busy : ranks_per_node) / cores_per_node);
  t.s += (t.a_intra + t.a_inter + t.e) * (1 - 1 / o);
  t.a_intra *= o, t.e *= o, t.c *= o, t.b_intra *= ob, t.g *= ob, t.m *= ob;
  if (network_on_cpus) t.a_inter *= o;
  if (network_on_cpus && !links_shaped) t.b_inter *= ob;  // a shaped link paces its bytes whoever runs
  return t;
}

//! Adds the cache term for a collective touching S bytes per rank, each rank having `cache` bytes
//! of cache (see the file comment; the network's bytes too when it runs on the CPUs); cache <= 0:
//! not modelled.
[[nodiscard]] inline cost_terms spilled(cost_terms t, double S, double cache, bool network_on_cpus = false) noexcept {
  if (!(cache > 0) || !(S > 0)) return t;
  t.m += (t.b_intra + t.g + (network_on_cpus ? t.b_inter : 0)) * std::max(0.0, 1 - cache / (3 * S));
  return t;
}

namespace detail {
//! The argument check's terms (machine_shape::check) for `algorithm` over `where`.
inline cost_terms check_terms(std::string_view algorithm, const layout& where, argument_check how) {
  if (how == argument_check::none || where.world < 2 || (algorithm == "direct" && where.nodes == 1)) return {};
  if (how == argument_check::epoch && where.nodes == 1) {
    cost_terms epoch;
    epoch.e = 1;
    return epoch;
  }
  // a descriptor to every peer: the q - 1 of its own node inside it, the others across
  const double near = std::min(where.world, ranks_on_a_node(where)) - 1.0, far = where.world - 1.0 - near;
  cost_terms t = on(level::inter, far, 32 * far, 0);
  t.a_intra = near, t.b_intra = 32 * near;
  return t;
}

//! Terms of `algorithm` for `c` on S bytes in all, without oversubscription.
inline std::optional<cost_terms> schedule_terms(std::string_view algorithm, collective c, const layout& where, double S,
                                                const schedule_settings& set, const machine_shape& m) {
  const int q = ranks_on_a_node(where);
  const auto parts = split_composed_name(algorithm);
  const double links = m.node_links;
  if (!parts) return flat_schedule_terms(algorithm, c, {where.world, q, links, m.message_copies, m.network_on_cpus, m.links_shaped}, S, set);
  if (parts->outer != "hierarchical" || where.ranks_per_node <= 0) return std::nullopt;  // hierarchical refuses uneven nodes
  const int nodes = where.nodes;
  const layout node{q, 1, q};        // one node: the intra algorithm's view (it may be composed too)
  const layout across{nodes, nodes, 1};  // one rank per node: the inter algorithm's view
  if (nodes == 1 && c != collective::allreduce) return schedule_terms(parts->first, c, node, S, set, m);  // Intra's
  switch (c) {
    case collective::allreduce: {
      if (schedule_terms(parts->first, collective::reduce_scatter, node, S, set, m)) {
        // reduce-scatter in the node, q allreduces of S/q at once across nodes, allgather in the
        // node: on whole blocks of count / q elements; the count % q left (the tail) goes whole
        // through Intra's allreduce and Inter's. So on one node too it is two of Intra's
        // collectives, not Intra's allreduce (and three when q does not divide the count).
        const double esz = std::max(1.0, set.element_bytes), count = std::floor(S / esz);
        const double body = std::floor(count / q) * q * esz, tail = S - body;
        cost_terms t;
        if (body > 0) {
          const auto rs = schedule_terms(parts->first, collective::reduce_scatter, node, body, set, m);
          const auto x = schedule_terms(parts->second, collective::allreduce, across, body / q, set, m);
          const auto ag = schedule_terms(parts->first, collective::allgather, node, body, set, m);
          if (!rs || !x || !ag) return std::nullopt;
          const flat_shape shape{where.world, q, links, m.message_copies, m.network_on_cpus, m.links_shaped};
          t += *rs + crowded(*x, shape.crowd()) + *ag;
        }
        if (tail > 0) {
          const auto i = schedule_terms(parts->first, collective::allreduce, node, tail, set, m);
          const auto x = schedule_terms(parts->second, collective::allreduce, across, tail, set, m);
          if (!i || !x) return std::nullopt;
          t += *i + *x;
        }
        return t;
      }
      // an Intra that cannot reduce-scatter (tree): reduce to local rank 0, allreduce, broadcast
      const auto up = schedule_terms(parts->first, collective::reduce, node, S, set, m);
      const auto x = schedule_terms(parts->second, collective::allreduce, across, S, set, m);
      const auto down = schedule_terms(parts->first, collective::broadcast, node, S, set, m);
      if (!up || !x || !down) return std::nullopt;
      return *up + *x + *down;
    }
    case collective::broadcast:  // through the root's local index on every node: across, then inside
    case collective::reduce:     // inside, then across
    case collective::barrier: {  // Intra's, then Inter's
      const auto x = schedule_terms(parts->second, c, across, S, set, m);
      const auto i = schedule_terms(parts->first, c, node, S, set, m);
      if (!x || !i) return std::nullopt;
      return *x + *i;
    }
    case collective::alltoall: return pairwise_alltoall({where.world, q, links, m.message_copies, m.network_on_cpus, m.links_shaped}, S);
    default: return std::nullopt;  // reduce_scatter, allgather: block permutations not modelled
  }
}
//! The token-bucket shaped link's terms of `algorithm` for `c` on S bytes over `where`
//! (tuner/shaped_link.hpp), `flows` times at once per node; hierarchical's are its Inter's, run by
//! the q ranks of a node at once on whole blocks (and once more on the count's remainder), as in
//! schedule_terms above; its Intra phases use no link.
inline std::optional<cost_terms> link_terms(std::string_view algorithm, collective c, const layout& where, double S,
                                            const schedule_settings& set, const machine_shape& m, double flows = 1) {
  const int q = ranks_on_a_node(where);
  const flat_shape shape{where.world, q, m.node_links, m.message_copies, m.network_on_cpus, true};
  const auto parts = split_composed_name(algorithm);
  if (!parts) return flat_link_terms(algorithm, c, {where.world, q, shape.crowd(), flows, m.bucket_bytes}, S, set);
  if (parts->outer != "hierarchical" || where.ranks_per_node <= 0 || c != collective::allreduce) return std::nullopt;
  const layout node{q, 1, q}, across{where.nodes, where.nodes, 1};
  if (!schedule_terms(parts->first, collective::reduce_scatter, node, S, set, m))  // Intra's reduce, Inter's allreduce of S, Intra's broadcast
    return link_terms(parts->second, c, across, S, set, m, flows);
  const double esz = std::max(1.0, set.element_bytes), count = std::floor(S / esz);
  const double body = std::floor(count / q) * q * esz, tail = S - body;
  cost_terms t;
  if (body > 0) {
    const auto x = link_terms(parts->second, c, across, body / q, set, m, flows * shape.crowd());
    if (!x) return std::nullopt;
    t += *x;
  }
  if (tail > 0) {
    const auto x = link_terms(parts->second, c, across, tail, set, m, flows);
    if (!x) return std::nullopt;
    t += *x;
  }
  return t;
}
}  // namespace detail

//! The total bytes a collective moves from the bytes a table counts (count x element size as
//! collective_descriptor counts it): one rank's block for reduce_scatter, allgather and alltoall.
[[nodiscard]] inline double whole_vector_bytes(collective c, const layout& where, double bytes) noexcept {
  const bool per_rank = c == collective::reduce_scatter || c == collective::allgather || c == collective::alltoall;
  return per_rank ? bytes * where.world : bytes;
}

//! The cost terms of `algorithm` (a name as tables write it) for collective `c` of `bytes` (as a
//! table counts them) over `where`, with `cores_per_node` cores for a node's ranks (0: unknown,
//! no oversubscription; namespace hosts sharing one machine: its cores / nodes) and `tuning` the
//! row's or sample's tuning values; `m` what is known of the machine. nullopt: no formula.
[[nodiscard]] inline std::optional<cost_terms> terms_of(std::string_view algorithm, collective c, const layout& where, double bytes,
                                                        double cores_per_node = 0, std::span<const tuning_value> tuning = {},
                                                        const machine_shape& m = {}) {
  if (where.world < 1 || where.nodes < 1 || !(bytes >= 0)) return std::nullopt;
  const double S = whole_vector_bytes(c, where, bytes);
  if (m.links_shaped && m.token_bucket) {  // the schedule as if unshaped, and its link's bytes beside it
    machine_shape unshaped = m;
    unshaped.links_shaped = false;
    auto t = terms_of(algorithm, c, where, bytes, cores_per_node, tuning, unshaped);
    const auto l = t ? detail::link_terms(algorithm, c, where, S, settings_of(tuning), m) : std::nullopt;
    if (!l) return std::nullopt;
    t->link_within = l->link_within, t->link_paced = l->link_paced, t->link_exchange = l->link_exchange;
    return t;
  }
  auto t = detail::schedule_terms(algorithm, c, where, S, settings_of(tuning), m);
  if (!t) return std::nullopt;
  *t += detail::check_terms(algorithm, where, m.check);
  if (where.world > 1) t->c += 1;  // the call itself
  const double q = ranks_on_a_node(where), busy = competing_ranks(algorithm, where);
  const double cache = cores_per_node > 0 && busy > cores_per_node ? m.cache_bytes * cores_per_node / busy : m.cache_bytes;
  return oversubscribed(spilled(*t, S, cache, m.network_on_cpus && !m.links_shaped), q, cores_per_node, busy, m.network_on_cpus,
                        m.links_shaped);
}

//! Predicted seconds of `algorithm` for `c` on `bytes` over `where` (terms_of, priced with `p`).
[[nodiscard]] inline std::optional<double> predicted_seconds(const cost_parameters& p, std::string_view algorithm, collective c,
                                                             const layout& where, double bytes, double cores_per_node = 0,
                                                             std::span<const tuning_value> tuning = {}) {
  const auto t = terms_of(algorithm, c, where, bytes, cores_per_node, tuning, p.machine);
  if (!t) return std::nullopt;
  return seconds(p, *t);
}

//! The model a table stores, as parameters (one network link per node, as where it was fitted).
[[nodiscard]] inline cost_parameters parameters_of(const fitted_model& m) noexcept {
  cost_parameters p;
  p.intra = {m.alpha_intra, m.beta_intra};
  p.inter = {m.alpha_inter, m.beta_inter};
  p.gamma = m.gamma;
  p.alpha_sync = m.alpha_sync;
  p.base_latency = m.base_latency;
  p.switch_cost = m.switch_cost;
  p.memory_beta = m.memory_beta;
  p.machine.cache_bytes = m.cache_bytes;
  p.machine.network_on_cpus = m.network_on_cpus;
  return p;
}

}  // namespace tutti::tuner
