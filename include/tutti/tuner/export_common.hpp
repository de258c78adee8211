//! @file export_common.hpp  What the three exporters (NCCL, UCC, Open MPI) share: a row's
//! algorithm taken apart and resolved on its layout, pieces of a row mapped to a peer's algorithm,
//! byte ranges rescaled to the peer's message size, and the comment lines that say where a table
//! came from.
//!
//! Each exporter (tuner/export_nccl.hpp, export_ucc.hpp, export_ompi.hpp) maps every row to
//! *pieces*: sub-ranges of the row's bytes, each either a peer algorithm (with "exact" or
//! "nearest" and why) or none (with why), and writes them in the peer's own format. A row splits
//! only where tutti's own algorithm switches schedule inside it (halving_doubling's crossovers),
//! so a piece says what tutti really ran at those sizes. docs/tuning.md ("Exporting to NCCL, UCC,
//! Open MPI") has the mapping tables.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/core/error.hpp"
#include "tutti/tuner/halving_doubling.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::tuner::exporting {

//! How many tutti::collective values there are (allreduce .. alltoall): the peers' name tables' size.
inline constexpr std::size_t collective_kinds_exported = 7;
static_assert(static_cast<std::size_t>(collective::alltoall) + 1 == collective_kinds_exported);

inline constexpr std::uint64_t unbounded = std::numeric_limits<std::uint64_t>::max();  //!< "inf"

//! An algorithm's name taken apart: "hierarchical<direct, ring>" is base "hierarchical" with
//! arguments "direct" and "ring" (tuned<...> and nested hierarchies parse the same way).
struct algorithm_name {
  std::string base;
  std::vector<algorithm_name> args;

  [[nodiscard]] std::string text() const {
    if (args.empty()) return base;
    std::string out = base + "<";
    for (std::size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i].text();
    return out + ">";
  }
};

namespace detail {
inline std::string_view trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}
inline algorithm_name parse_from(std::string_view whole, std::string_view& rest) {
  algorithm_name out;
  const auto stop = rest.find_first_of("<,>");
  out.base = std::string(trimmed(rest.substr(0, stop)));
  if (out.base.empty()) throw invalid_argument("algorithm name \"" + std::string(whole) + "\": a name is missing");
  rest = stop == std::string_view::npos ? std::string_view{} : rest.substr(stop);
  if (rest.empty() || rest.front() != '<') return out;
  rest.remove_prefix(1);
  for (;;) {
    out.args.push_back(parse_from(whole, rest));
    if (rest.empty()) throw invalid_argument("algorithm name \"" + std::string(whole) + "\": '<' is never closed");
    const char at = rest.front();
    rest.remove_prefix(1);
    if (at == '>') return out;
    if (at != ',') throw invalid_argument("algorithm name \"" + std::string(whole) + "\": unexpected '" + at + "'");
  }
}
}  // namespace detail

//! Takes a table's algorithm name apart; a malformed one is an invalid_argument naming it.
[[nodiscard]] inline algorithm_name parse_algorithm(std::string_view text) {
  std::string_view rest = text;
  algorithm_name out = detail::parse_from(text, rest);
  if (!detail::trimmed(rest).empty())
    throw invalid_argument("algorithm name \"" + std::string(text) + "\": unexpected \"" + std::string(rest) + "\"");
  return out;
}

//! What a row's algorithm runs on the row's layout, as the exporters map it: `automatic` replaced
//! by what it picks (algorithm/automatic.hpp) for the table's transport, and a hierarchy over one
//! node (or one rank per node) replaced by the one level that does anything. `how` says what was
//! replaced ("" when nothing was), for the exporters' comments.
struct resolved {
  algorithm_name name;
  std::string how;
};

[[nodiscard]] inline resolved resolve(const algorithm_name& a, const layout& where, std::string_view transport) {
  if (a.base == "automatic" && a.args.empty()) {
    std::string picks;
    if (transport == "shm")
      picks = "direct";
    else if (transport == "multi_node" || transport.starts_with("node_aware"))
      picks = where.ranks_per_node > 1 ? "hierarchical<direct, ring>" : "ring";  // automatic.hpp's rule
    else if (!transport.empty())
      picks = "ring";
    if (picks.empty())
      return {a, "automatic: the table does not say a transport it can resolve (provenance.transport)"};
    resolved inner = exporting::resolve(exporting::parse_algorithm(picks), where, transport);
    inner.how =
        "automatic picks " + picks + " over " + std::string(transport) + (inner.how.empty() ? "" : "; " + inner.how);
    return inner;
  }
  if (a.base == "hierarchical" && a.args.size() == 2 && (where.nodes == 1 || where.ranks_per_node == 1)) {
    const bool one_node = where.nodes == 1;
    resolved inner = exporting::resolve(a.args[one_node ? 0 : 1], where, transport);
    inner.how = a.text() +
                (one_node ? " on one node runs its intra-node " : " with one rank per node runs its inter-node ") +
                inner.name.text() + (inner.how.empty() ? "" : "; " + inner.how);
    return inner;
  }
  return {a, ""};
}

//! A sub-range of a row (bytes as the table counts them) and what the peer runs there: `peer`
//! empty means no counterpart, and `why` says why; otherwise `why` begins "exact" or "nearest".
struct piece {
  std::uint64_t min_bytes = 0, max_bytes = 0;
  std::string peer;
  int peer_id = -1;       //!< the peer's numeric id where it has one (Open MPI), else -1
  std::string_view part;  //!< which of the peer's components runs it (UCC: "tl_ucp", "cl_hier")
  std::string why;
};

//! The whole row as one piece.
[[nodiscard]] inline std::vector<piece> whole(const row& r, piece p) {
  p.min_bytes = r.min_bytes;
  p.max_bytes = r.max_bytes;
  return {std::move(p)};
}
//! No counterpart for the whole row.
[[nodiscard]] inline std::vector<piece> none(const row& r, std::string why) {
  piece p;
  p.why = std::move(why);
  return exporting::whole(r, std::move(p));
}
//! The row cut where tutti switches schedule: sizes below `at` run `below`, from `at` on `from`.
[[nodiscard]] inline std::vector<piece> split_at(const row& r, std::uint64_t at, piece below, piece from) {
  if (r.max_bytes < at) return exporting::whole(r, std::move(below));
  if (r.min_bytes >= at) return exporting::whole(r, std::move(from));
  below.min_bytes = r.min_bytes;
  below.max_bytes = at - 1;
  from.min_bytes = at;
  from.max_bytes = r.max_bytes;
  return {std::move(below), std::move(from)};
}

//! A halving_doubling crossover for this row: the row's tuning value when it sets one, else the
//! default (tuner/halving_doubling.hpp). `field` is the knob's name ("tree_reduce_bytes").
[[nodiscard]] inline std::uint64_t halving_doubling_knob(const row& r, std::string_view field) {
  const std::string dotted = std::string(halving_doubling_tuning::name) + "." + std::string(field);
  for (const auto& v : r.tuning)
    if (v.name == dotted) return v.value;
  for (const auto& k : halving_doubling_tuning::knobs)
    if (k.name == field) return halving_doubling_tuning{}.*k.field;
  return 0;
}

//! Where halving_doubling switches schedule inside a row, as (first size of the second schedule):
//! broadcast is a binomial tree below scatter_broadcast_bytes (and always with fewer than 3 ranks);
//! reduce is a binomial tree up to tree_reduce_bytes; alltoall is Bruck up to bruck_block_bytes per
//! block (pairwise with fewer than 3 ranks). unbounded: the first schedule everywhere; 0: the second.
[[nodiscard]] inline std::uint64_t halving_doubling_switch(const row& r) {
  const auto past = [](std::uint64_t b) { return b == unbounded ? unbounded : b + 1; };
  switch (r.collective_kind) {
    case collective::broadcast:
      return r.where.world < 3 ? unbounded : exporting::halving_doubling_knob(r, "scatter_broadcast_bytes");
    case collective::reduce: return past(exporting::halving_doubling_knob(r, "tree_reduce_bytes"));
    case collective::alltoall:
      return r.where.world < 3 ? 0 : past(exporting::halving_doubling_knob(r, "bruck_block_bytes"));
    default: return unbounded;
  }
}

//! Bytes as the table counts them (collective_descriptor's count: per rank for reduce_scatter,
//! allgather and alltoall) times `factor`, the peer's count: the range [min, max] becomes
//! [min·f, (max+1)·f − 1], so ranges that touched still touch. "inf" stays "inf".
[[nodiscard]] inline std::uint64_t scaled_min(std::uint64_t b, std::uint64_t factor) {
  return factor != 0 && b > unbounded / factor ? unbounded : b * factor;
}
[[nodiscard]] inline std::uint64_t scaled_max(std::uint64_t b, std::uint64_t factor) {
  if (b == unbounded || factor == 0 || b + 1 > unbounded / factor) return unbounded;
  return (b + 1) * factor - 1;
}

//! "2047", or "inf" for the last range.
[[nodiscard]] inline std::string bytes_text(std::uint64_t b) { return b == unbounded ? "inf" : std::to_string(b); }

//! "2 nodes x 2 (world 4)", or "world 3 on 2 nodes (uneven)".
[[nodiscard]] inline std::string layout_text(const layout& l) {
  if (l.ranks_per_node == 0)
    return "world " + std::to_string(l.world) + " on " + std::to_string(l.nodes) + " nodes (uneven)";
  return std::to_string(l.nodes) + (l.nodes == 1 ? " node x " : " nodes x ") + std::to_string(l.ranks_per_node) +
         " (world " + std::to_string(l.world) + ")";
}

//! "row 3 (line 40): allreduce 0-2047 B, halving_doubling" — how a comment names a row.
[[nodiscard]] inline std::string row_text(const table& t, const row& r) {
  const auto index = static_cast<std::size_t>(&r - t.rows.data());
  return "row " + std::to_string(index + 1) + (r.line ? " (line " + std::to_string(r.line) + ")" : "") + ": " +
         std::string(name_of(r.collective_kind)) + " " + std::to_string(r.min_bytes) + "-" +
         exporting::bytes_text(r.max_bytes) + " B, " + r.algorithm;
}

//! A row's algorithm resolved on its layout; a malformed name is refused naming the row.
[[nodiscard]] inline resolved resolve_row(const table& t, const row& r) {
  try {
    return exporting::resolve(exporting::parse_algorithm(r.algorithm), r.where, t.made.transport);
  } catch (const invalid_argument& e) {
    throw invalid_argument(t.source + ": " + exporting::row_text(t, r) + ": " + e.what());
  }
}

//! The rows one export writes: those of `dtypes`, ordered by layout (world, nodes), then
//! collective, then size — the order every peer format wants.
[[nodiscard]] inline std::vector<const row*> rows_to_export(const table& t, dtype_class dtypes) {
  std::vector<const row*> out;
  for (const auto& r : t.rows)
    if (r.dtypes == dtypes) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [](const row* a, const row* b) {
    const auto key = [](const row* r) {
      return std::tuple(r->where.world, r->where.nodes, r->where.ranks_per_node, static_cast<int>(r->collective_kind),
                        r->min_bytes);
    };
    return key(a) < key(b);
  });
  return out;
}

//! Lines (without a comment marker) saying what was exported from where; every format's header.
[[nodiscard]] inline std::vector<std::string> provenance_lines(const table& t, std::string_view peer,
                                                               dtype_class dtypes) {
  std::vector<std::string> out;
  out.push_back("written by tutti from the tuning table " + (t.source.empty() ? std::string("(in memory)") : t.source) +
                " for " + std::string(peer));
  const auto& m = t.made;
  std::string where;
  for (const auto& h : m.hosts) where += (where.empty() ? "" : ", ") + h;
  if (!where.empty()) out.push_back("measured on " + where + (m.cpu.empty() ? "" : " (" + m.cpu + ")"));
  if (!m.date.empty() || !m.tutti_commit.empty() || !m.transport.empty())
    out.push_back("date " + (m.date.empty() ? "?" : m.date) + ", tutti " +
                  (m.tutti_commit.empty() ? "?" : m.tutti_commit) + ", transport " +
                  (m.transport.empty() ? "?" : m.transport));
  std::size_t skipped = 0;
  for (const auto& r : t.rows) skipped += r.dtypes != dtypes;
  out.push_back("rows for " + std::string(name_of(dtypes)) + " elements" +
                (skipped ? " (" + std::to_string(skipped) + " rows for other elements left out: " + std::string(peer) +
                               " does not choose by element type)"
                         : ""));
  return out;
}

//! `text` cut to at most `limit` characters (a peer that reads fixed-size lines must never see a
//! comment's tail as a line of its own).
[[nodiscard]] inline std::string clipped(std::string text, std::size_t limit) {
  if (text.size() > limit) text.resize(limit);
  return text;
}

}  // namespace tutti::tuner::exporting
