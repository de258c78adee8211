//! @file export_ucc.hpp  A tuning table as UCC_TL_UCP_TUNE / UCC_CL_HIER_TUNE score strings, in
//! a ucc.conf fragment (UCC_CONFIG_FILE) with one section per layout.
//!
//! A TUNE string is `token#token#...`; a token is `:`-separated qualifiers in any order, each
//! recognised by its shape (src/coll_score/ucc_coll_score.c, ucc_coll_score_parse_str): a
//! collective name, a memory type ("host"), a score ("inf" or a number), message ranges
//! `start-end` (inclusive both ends, bytes or "inf"), team sizes `[a-b,...]`, an algorithm `@name`.
//! This writer gives every token a collective, one range, "host" (tutti measured host memory),
//! the algorithm and score "inf", so the choice beats every other component's default.
//!
//! Layouts: TL/UCP reads `UCC_TL_UCP_TUNE` from ucc.conf sections `[team_size=W ppn=P nnodes=N]`
//! matched against each team's topology (src/utils/ucc_parser.c, ucc_add_team_sections), so a
//! layout's TL/UCP tokens go in its own section and match it exactly. CL/HIER reads its
//! `UCC_CL_HIER_TUNE` only outside sections, so its tokens carry the team-size qualifier `[W]`,
//! which cannot tell two layouts of one world apart: the first layout of a world keeps it.
//! UCC measures allgather and alltoall over all ranks' bytes (ucc_coll_args_msgsize), tutti per
//! rank: those ranges are multiplied by the world size; reduce_scatter counts the same in both.
//! Checked against UCC 1.4.4 itself (tests/tuner/peers/check_ucc.sh): its team score maps hold
//! exactly the exported ranges and algorithms, per section.
#pragma once
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tutti/tuner/export_common.hpp"

namespace tutti::tuner {

struct ucc_export_options {
  dtype_class dtypes = dtype_class::floating;  //!< UCC's scores do not see the element type
  //! TL/UCP has an allreduce ring since UCC 1.8 (commit 29d44012); an older UCC refuses the
  //! unknown name and drops the whole TUNE string it is in, so for one set this false (ring
  //! allreduce rows are then left to UCC). Every other algorithm written exists since UCC 1.4.
  bool allreduce_ring = true;
};

namespace exporting {

//! UCC's name of each collective (tutti::collective's order; ucc_coll_type_from_str reads them).
inline constexpr std::array<std::string_view, collective_kinds_exported> ucc_names{
    "allreduce", "reduce_scatter", "allgather", "bcast", "barrier", "reduce", "alltoall"};
[[nodiscard]] inline std::string_view ucc_collective(collective c) { return ucc_names[static_cast<std::size_t>(c)]; }

inline constexpr std::string_view tl_ucp = "tl_ucp", cl_hier = "cl_hier";

//! tutti's algorithm on this row -> UCC's (docs/tuning.md has the table).
[[nodiscard]] inline std::vector<piece> ucc_pieces(const row& r, const resolved& a, const ucc_export_options& o = {}) {
  const collective c = r.collective_kind;
  const auto make = [](std::string_view part, std::string peer, std::string why) {
    piece p;
    p.part = part;
    p.peer = std::move(peer);
    p.why = std::move(why);
    return p;
  };
  const auto to = [&](std::string peer, std::string why, std::string_view part = tl_ucp) {
    return exporting::whole(r, make(part, std::move(peer), std::move(why)));
  };
  const std::string& base = a.name.base;
  const std::string coll(name_of(c));
  if (base == "ring") {
    if (c == collective::allreduce && !o.allreduce_ring)
      return exporting::none(r, "TL/UCP's allreduce ring needs UCC 1.8 (ucc_export_options::allreduce_ring is off)");
    if (c == collective::allreduce || c == collective::allgather || c == collective::reduce_scatter)
      return to("ring", "exact: TL/UCP's ring");
    if (c == collective::alltoall)
      return to("pairwise", "exact with UCC_TL_UCP_ALLTOALL_PAIRWISE_NUM_POSTS=8: the pairwise exchange, 8 in flight");
    return exporting::none(r, "TL/UCP has no ring " + coll);
  }
  if (base == "tree") {
    if (c == collective::allreduce || c == collective::broadcast || c == collective::reduce)
      return to("dbt", "exact: TL/UCP's double binary tree");
    return exporting::none(r, "TL/UCP has no tree " + coll);
  }
  if (base == "halving_doubling") {
    switch (c) {
      case collective::allreduce:
        return to("sra_knomial",
                  "exact with UCC_TL_UCP_ALLREDUCE_SRA_KN_RADIX=2: scatter-reduce + allgather (Rabenseifner)");
      case collective::allgather:
        return to("knomial", "nearest: recursive k-ing; UCC_TL_UCP_ALLGATHER_KN_RADIX=2 is recursive doubling");
      case collective::reduce_scatter:
        return to("knomial", "nearest: recursive k-ing; UCC_TL_UCP_REDUCE_SCATTER_KN_RADIX=2 is recursive halving");
      case collective::broadcast:
        return exporting::split_at(r, exporting::halving_doubling_switch(r),
                                   make(tl_ucp, "knomial", "exact with UCC_TL_UCP_BCAST_KN_RADIX=2: a binomial tree"),
                                   make(tl_ucp, "sag_knomial", "nearest: scatter + allgather (van de Geijn)"));
      case collective::reduce:
        return exporting::split_at(r, exporting::halving_doubling_switch(r),
                                   make(tl_ucp, "knomial", "exact with UCC_TL_UCP_KN_RADIX=2: a binomial tree"),
                                   make(tl_ucp, "srg", "nearest: scatter-reduce + gather (Rabenseifner)"));
      case collective::alltoall:
        return exporting::split_at(r, exporting::halving_doubling_switch(r), make(tl_ucp, "bruck", "exact: Bruck"),
                                   make(tl_ucp, "pairwise", "exact: the pairwise exchange"));
      case collective::barrier:
        return to("knomial",
                  "nearest: recursive knomial (radix 8 unless UCC_TL_UCP_BARRIER_KN_RADIX); tutti's is dissemination");
    }
  }
  if (base == "direct")
    return exporting::none(
        r, "direct reads peers' memory in place; TL/UCP sends messages (HPC-X's TL/SHM is nearest, not in open UCC)");
  if (base == "hierarchical" && a.name.args.size() == 2) {
    const bool intra_reduce_scatters = a.name.args[0].base != "tree";
    switch (c) {
      case collective::allreduce:
        if (intra_reduce_scatters)
          return to("split_rail", "exact shape: reduce-scatter in node, allreduce across, allgather in node", cl_hier);
        return to("rab", "exact shape: reduce in node, allreduce across, broadcast in node", cl_hier);
      case collective::broadcast:
        return to("2step", "nearest: across nodes and inside each, UCC overlapping the two", cl_hier);
      case collective::reduce:
        return to("2step", "nearest: inside each node and across, UCC overlapping the two", cl_hier);
      case collective::alltoall:
        return to("pairwise", "exact: tutti's hierarchical alltoall is the flat pairwise exchange");
      default: return exporting::none(r, "CL/HIER has no " + coll + " (allgatherv only)");
    }
  }
  return exporting::none(r, "no UCC counterpart known for " + a.name.text());
}

//! One token: `allreduce:0-2047:host[:[4]]:@knomial:inf`.
[[nodiscard]] inline std::string ucc_token(collective c, std::uint64_t lo, std::uint64_t hi, const std::string& alg,
                                           int team_size = 0) {
  return std::string(exporting::ucc_collective(c)) + ":" + std::to_string(lo) + "-" + exporting::bytes_text(hi) +
         ":host:" + (team_size ? "[" + std::to_string(team_size) + "]:" : "") + "@" + alg + ":inf";
}

//! The ucc.conf section header that matches exactly one layout's teams.
[[nodiscard]] inline std::string ucc_section(const layout& l) {
  return "[team_size=" + std::to_string(l.world) +
         (l.ranks_per_node ? " ppn=" + std::to_string(l.ranks_per_node) : "") + " nnodes=" + std::to_string(l.nodes) +
         "]";
}

[[nodiscard]] inline std::string ucc_conf(const table& t, const ucc_export_options& o) {
  struct layout_part {
    layout where;
    std::vector<std::string> comments, tl_tokens;
  };
  std::vector<layout_part> parts;
  std::vector<std::string> hier_comments, hier_tokens;
  std::map<int, layout> hier_owner;  // world -> the layout whose CL/HIER tokens it carries
  for (const row* r : exporting::rows_to_export(t, o.dtypes)) {
    if (parts.empty() || !(parts.back().where == r->where)) parts.push_back({r->where, {}, {}});
    layout_part& part = parts.back();
    const resolved a = exporting::resolve_row(t, *r);
    part.comments.push_back(exporting::row_text(t, *r) + (a.how.empty() ? "" : " (" + a.how + ")"));
    const bool all_ranks = r->collective_kind == collective::allgather || r->collective_kind == collective::alltoall;
    const auto factor = static_cast<std::uint64_t>(all_ranks ? r->where.world : 1);
    for (const piece& p : exporting::ucc_pieces(*r, a, o)) {
      const std::string sizes = "  " + std::to_string(p.min_bytes) + "-" + exporting::bytes_text(p.max_bytes) + " B";
      if (p.peer.empty()) {
        part.comments.push_back(sizes + ": no UCC counterpart, UCC keeps its own choice: " + p.why);
        continue;
      }
      const std::uint64_t lo = exporting::scaled_min(p.min_bytes, factor),
                          hi = exporting::scaled_max(p.max_bytes, factor);
      if (p.part == cl_hier) {
        const auto [owner, fresh] = hier_owner.try_emplace(r->where.world, r->where);
        if (!fresh && !(owner->second == r->where)) {
          part.comments.push_back(sizes + ": CL/HIER @" + p.peer + " not written: UCC_CL_HIER_TUNE's team size [" +
                                  std::to_string(r->where.world) + "] already carries " +
                                  exporting::layout_text(owner->second));
          continue;
        }
        hier_tokens.push_back(exporting::ucc_token(r->collective_kind, lo, hi, p.peer, r->where.world));
        part.comments.push_back(sizes + " -> CL/HIER @" + p.peer + " in UCC_CL_HIER_TUNE (" + p.why + ")");
        continue;
      }
      part.tl_tokens.push_back(exporting::ucc_token(r->collective_kind, lo, hi, p.peer));
      part.comments.push_back(sizes + " -> TL/UCP @" + p.peer + " (" + p.why + ")" +
                              (factor > 1 ? "; UCC counts bytes over all ranks" : ""));
    }
  }
  const auto join = [](const std::vector<std::string>& tokens) {
    std::string s;
    for (const auto& tk : tokens) s += (s.empty() ? "" : "#") + tk;
    return s;
  };
  std::string out = "# UCC configuration fragment (UCC_CONFIG_FILE=<this file>, or append to ucc.conf)\n";
  for (const auto& line : exporting::provenance_lines(t, "UCC", o.dtypes)) out += "# " + line + "\n";
  out += "# TL/UCP lines sit in one section per layout; each could also be set alone as an environment variable\n";
  out += std::string("# needs UCC 1.4 or later") + (o.allreduce_ring ? " (1.8 for allreduce @ring)" : "") +
         ": UCC drops a whole TUNE string that names an algorithm it lacks\n";
  if (!hier_tokens.empty()) {
    out +=
        "# CL/HIER runs only when UCC_CLS includes hier (e.g. UCC_CLS=basic,hier); it picks its own inner algorithms\n";
    out += "UCC_CL_HIER_TUNE=" + join(hier_tokens) + "\n";
  }
  for (const auto& part : parts) {
    bool shadowed = false;  // an uneven layout's section (no ppn) would also match an even one of its size
    if (part.where.ranks_per_node == 0)
      for (const auto& other : parts)
        shadowed |= other.where.ranks_per_node != 0 && other.where.world == part.where.world &&
                    other.where.nodes == part.where.nodes;
    out += "\n";
    if (shadowed) out += "# not written: a section for this uneven layout would also match the even one below\n";
    out += (shadowed ? "# " : "") + exporting::ucc_section(part.where) + "\n";
    for (const auto& c : part.comments) out += "# " + c + "\n";
    if (!part.tl_tokens.empty())
      out += std::string(shadowed ? "# " : "") + "UCC_TL_UCP_TUNE=" + join(part.tl_tokens) + "\n";
  }
  return out;
}

}  // namespace exporting

//! The table's rows for `o.dtypes` as a ucc.conf fragment (see the file comment).
[[nodiscard]] inline std::string to_ucc_conf(const table& t, const ucc_export_options& o = {}) {
  return exporting::ucc_conf(t, o);
}

}  // namespace tutti::tuner
