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
//! node's CPUs — copying through shared memory (intra alpha and beta) and reducing (gamma) —
//! stretches by q / c; and a rank that waits for a peer finds it descheduled with probability
//! 1 - c / q (the share of the node's ranks not running at a given moment) and then waits for a
//! scheduler switch, `switch_cost` seconds, fitted. So with o = max(1, q / c):
//!   t = o (a_intra alpha_intra + b_intra beta_intra + g gamma) + a_inter alpha_inter
//!       + b_inter beta_inter + (a_intra + a_inter)(1 - 1/o) switch_cost.
//! Network terms are not stretched: a NIC moves bytes whether or not its rank is running (for
//! namespace hosts on one VM the "network" is the same CPUs, and the fit absorbs that into the
//! inter parameters). docs/tuning.md ("The cost model") has the measurements behind this.
#pragma once
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "tutti/core/collective.hpp"
#include "tutti/tuner/cost_model.hpp"
#include "tutti/tuner/knobs.hpp"
#include "tutti/tuner/schedule_terms.hpp"
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

//! Adds the oversubscription term to a schedule's terms (see the file comment); cores <= 0: unknown, none.
[[nodiscard]] inline cost_terms oversubscribed(cost_terms t, double ranks_per_node, double cores_per_node) noexcept {
  if (!(cores_per_node > 0) || ranks_per_node <= cores_per_node) return t;
  const double o = ranks_per_node / cores_per_node;
  t.s += (t.a_intra + t.a_inter) * (1 - 1 / o);
  t.a_intra *= o, t.b_intra *= o, t.g *= o;
  return t;
}

namespace detail {
//! Terms of `algorithm` for `c` on S bytes in all, without oversubscription.
inline std::optional<cost_terms> schedule_terms(std::string_view algorithm, collective c, const layout& where, double S,
                                                const schedule_settings& set, double links) {
  const int q = ranks_on_a_node(where);
  const auto parts = split_composed_name(algorithm);
  if (!parts) return flat_schedule_terms(algorithm, c, {where.world, q, links}, S, set);
  if (parts->outer != "hierarchical" || where.ranks_per_node <= 0) return std::nullopt;  // hierarchical refuses uneven nodes
  const int nodes = where.nodes;
  const layout node{q, 1, q};        // one node: the intra algorithm's view (it may be composed too)
  const layout across{nodes, nodes, 1};  // one rank per node: the inter algorithm's view
  if (nodes == 1) return schedule_terms(parts->first, c, node, S, set, links);  // degenerates to Intra
  switch (c) {
    case collective::allreduce: {
      const auto rs = schedule_terms(parts->first, collective::reduce_scatter, node, S, set, links);
      if (rs) {  // reduce-scatter in the node, q allreduces of S/q at once across nodes, allgather in the node
        const auto x = schedule_terms(parts->second, collective::allreduce, across, S / q, set, links);
        const auto ag = schedule_terms(parts->first, collective::allgather, node, S, set, links);
        if (!x || !ag) return std::nullopt;
        return *rs + crowded(*x, std::max(1.0, q / std::max(1.0, links))) + *ag;
      }
      // an Intra that cannot reduce-scatter (tree): reduce to local rank 0, allreduce, broadcast
      const auto up = schedule_terms(parts->first, collective::reduce, node, S, set, links);
      const auto x = schedule_terms(parts->second, collective::allreduce, across, S, set, links);
      const auto down = schedule_terms(parts->first, collective::broadcast, node, S, set, links);
      if (!up || !x || !down) return std::nullopt;
      return *up + *x + *down;
    }
    case collective::broadcast:  // through the root's local index on every node: across, then inside
    case collective::reduce:     // inside, then across
    case collective::barrier: {  // Intra's, then Inter's
      const auto x = schedule_terms(parts->second, c, across, S, set, links);
      const auto i = schedule_terms(parts->first, c, node, S, set, links);
      if (!x || !i) return std::nullopt;
      return *x + *i;
    }
    case collective::alltoall: return pairwise_alltoall({where.world, q, links}, S);
    default: return std::nullopt;  // reduce_scatter, allgather: block permutations not modelled
  }
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
//! row's or sample's tuning values; `node_links` network links per node. nullopt: no formula.
[[nodiscard]] inline std::optional<cost_terms> terms_of(std::string_view algorithm, collective c, const layout& where, double bytes,
                                                        double cores_per_node = 0, std::span<const tuning_value> tuning = {},
                                                        double node_links = 1) {
  if (where.world < 1 || where.nodes < 1 || !(bytes >= 0)) return std::nullopt;
  const auto t = detail::schedule_terms(algorithm, c, where, whole_vector_bytes(c, where, bytes), settings_of(tuning), node_links);
  if (!t) return std::nullopt;
  return oversubscribed(*t, ranks_on_a_node(where), cores_per_node);
}

//! Predicted seconds of `algorithm` for `c` on `bytes` over `where` (terms_of, priced with `p`).
[[nodiscard]] inline std::optional<double> predicted_seconds(const cost_parameters& p, std::string_view algorithm, collective c,
                                                             const layout& where, double bytes, double cores_per_node = 0,
                                                             std::span<const tuning_value> tuning = {}) {
  const auto t = terms_of(algorithm, c, where, bytes, cores_per_node, tuning, p.node_links);
  if (!t) return std::nullopt;
  return seconds(p, *t);
}

//! The model a table stores, as parameters (one network link per node, as where it was fitted).
[[nodiscard]] inline cost_parameters parameters_of(const fitted_model& m) noexcept {
  cost_parameters p;
  p.intra = {m.alpha_intra, m.beta_intra};
  p.inter = {m.alpha_inter, m.beta_inter};
  p.gamma = m.gamma;
  p.switch_cost = m.switch_cost;
  return p;
}

}  // namespace tutti::tuner
