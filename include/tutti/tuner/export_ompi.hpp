//! @file export_ompi.hpp  A tuning table as Open MPI coll/tuned dynamic rules: the classic text
//! file every release reads, and the JSON file Open MPI 6.0 reads
//! (`--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE`).
//!
//! Classic (ompi/mca/coll/tuned/coll_tuned_dynamic_file.c, read_rules_config_file_classic):
//! whitespace-separated integers read with fscanf("%li"), '#' to the end of the line a comment:
//! number of collectives; per collective its id, the number of communicator sizes; per size the
//! size, the number of message rules; per rule `msg_size alg faninout segsize`. Message rules
//! start at 0 and rise, each up to the next one's size − 1; alg 0 means Open MPI's fixed rules.
//! Releases up to 5.0 take for each communicator the block with the largest size <= its own, so
//! this writer puts a fixed-rules block below and after every measured size, and the measured
//! block covers exactly its world. Open MPI's main branch (to be 6.0; commit e973840, 2025) reads
//! a classic block as covering the sizes from the previous block's up to its own size − 1 — one
//! block later — so there use the JSON file, which states both ends.
//!
//! JSON (the same file's read_rules_json): {"collectives": {"allreduce": [{"comm_size_min",
//! "comm_size_max", "comm_rank_distribution", "rules": [{"msg_size_min", "msg_size_max" (or
//! "inf"), "alg" (the name of coll_tuned_<coll>_algorithm)}]}]}}, first match wins; a size no
//! rule covers gets the fixed rules. "single-node" and "one-per-node" tell 1xN and Nx1 apart from
//! other layouts of the same world; the JSON carries no comments (the classic file does).
//!
//! Message sizes: Open MPI counts allgather, alltoall and reduce_scatter(_block) over all ranks,
//! tutti per rank: those are multiplied by the world size. tutti's reduce_scatter (equal blocks)
//! is written for both MPI_Reduce_scatter and MPI_Reduce_scatter_block.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "tutti/tuner/export_common.hpp"

namespace tutti::tuner {

struct ompi_export_options {
  dtype_class dtypes = dtype_class::floating;  //!< coll/tuned does not choose by element type
};

namespace exporting {

//! An Open MPI collective: its id in coll/tuned's rules (COLLTYPE, coll_base_functions.h) and name.
struct ompi_collective {
  int id;
  std::string_view name;
};

//! The Open MPI collectives a tutti collective is written for.
[[nodiscard]] inline std::vector<ompi_collective> ompi_collectives(collective c) {
  switch (c) {
    case collective::allgather: return {{0, "allgather"}};
    case collective::allreduce: return {{2, "allreduce"}};
    case collective::alltoall: return {{3, "alltoall"}};
    case collective::barrier: return {{6, "barrier"}};
    case collective::broadcast: return {{7, "bcast"}};
    case collective::reduce: return {{11, "reduce"}};
    case collective::reduce_scatter: return {{12, "reduce_scatter"}, {13, "reduce_scatter_block"}};
  }
  return {};
}

//! tutti's algorithm on this row -> coll/tuned's algorithm for collective `coll` (ids from the
//! enumerations in coll_tuned_<coll>_decision.c; docs/tuning.md has the table).
[[nodiscard]] inline std::vector<piece> ompi_pieces(const row& r, const resolved& a, int coll) {
  const auto make = [](int id, std::string name, std::string why) {
    piece p;
    p.peer_id = id;
    p.peer = std::move(name);
    p.why = std::move(why);
    return p;
  };
  const auto to = [&](int id, std::string name, std::string why) {
    return exporting::whole(r, make(id, std::move(name), std::move(why)));
  };
  const std::string& base = a.name.base;
  const std::string coll_name(exporting::ompi_collectives(r.collective_kind).front().name);
  if (base == "ring") {
    switch (coll) {
      case 2: return to(4, "ring", "exact: reduce-scatter + allgather around the ring (tutti's is pipelined)");
      case 0: return to(4, "ring", "exact");
      case 12: return to(3, "ring", "exact");
      case 3: return to(2, "pairwise", "nearest: tutti keeps 8 exchanges in flight, Open MPI's pairwise one");
      case 6: return to(2, "double_ring", "nearest: tutti's ring barrier goes round once");
      case 7: return to(3, "pipeline", "nearest: a pipelined chain through every rank");
      case 11: return to(3, "pipeline", "nearest: a pipelined chain through every rank");
      default: return exporting::none(r, "coll/tuned has no ring reduce_scatter_block");
    }
  }
  if (base == "tree") {
    switch (coll) {
      case 2: return to(2, "nonoverlapping", "nearest: reduce then broadcast, without tutti's overlap of the two");
      case 6: return to(6, "tree", "exact: up and down a tree");
      case 7: return to(4, "split_binary_tree", "nearest: halves down two binary trees");
      case 11: return to(4, "binary", "nearest: one binary tree where tutti uses two");
      default: return exporting::none(r, "tutti's tree has no " + coll_name);
    }
  }
  if (base == "halving_doubling") {
    const std::uint64_t at = exporting::halving_doubling_switch(r);
    switch (coll) {
      case 2: return to(6, "rabenseifner", "exact: recursive halving + recursive doubling");
      case 0: return to(3, "recursive_doubling", "exact at powers of two");
      case 12: return to(2, "recursive_halving", "exact");
      case 13: return to(3, "recursive_halving", "exact");
      case 6: return to(4, "bruck", "exact: a dissemination barrier");
      case 3:
        return exporting::split_at(r, at, make(3, "modified_bruck", "exact: Bruck"), make(2, "pairwise", "exact"));
      case 7:
        return exporting::split_at(r, at, make(6, "binomial", "exact: a binomial tree"),
                                   make(8, "scatter_allgather", "exact: binomial scatter + allgather"));
      case 11:
        return exporting::split_at(r, at, make(5, "binomial", "exact: a binomial tree"),
                                   make(7, "rabenseifner", "exact"));
      default: return exporting::none(r, "no coll/tuned counterpart");
    }
  }
  if (base == "direct")
    return exporting::none(
        r, "direct reads peers' memory in place; coll/tuned sends messages (coll/sm, coll/xhc are nearer)");
  if (base == "hierarchical" && a.name.args.size() == 2) {
    if (coll == 3) return to(2, "pairwise", "nearest: tutti's hierarchical alltoall is the flat pairwise exchange");
    return exporting::none(r,
                           a.name.text() + ": coll/tuned is flat; Open MPI's hierarchical collectives are coll/han's");
  }
  return exporting::none(r, "no coll/tuned counterpart known for " + a.name.text());
}

//! One collective over one layout: its rules in Open MPI's bytes, in order, and what the rows said.
struct ompi_block {
  ompi_collective coll;
  layout where;
  std::vector<piece> rules;  //!< every piece, `peer` empty where Open MPI keeps its fixed rules
  std::vector<std::string> notes;
  [[nodiscard]] bool says_anything() const {
    for (const auto& p : rules)
      if (!p.peer.empty()) return true;
    return false;
  }
};

//! Every (Open MPI collective, layout) the rows of `dtypes` speak of, ordered by collective id,
//! then layout (world, nodes).
[[nodiscard]] inline std::vector<ompi_block> ompi_blocks(const table& t, dtype_class dtypes) {
  std::map<std::tuple<int, int, int, int>, ompi_block> blocks;
  for (const row* r : exporting::rows_to_export(t, dtypes)) {
    const resolved a = exporting::resolve_row(t, *r);
    for (const ompi_collective& coll : exporting::ompi_collectives(r->collective_kind)) {
      auto [it, fresh] =
          blocks.try_emplace(std::tuple(coll.id, r->where.world, r->where.nodes, r->where.ranks_per_node),
                             ompi_block{coll, r->where, {}, {}});
      const bool all_ranks = coll.id == 0 || coll.id == 3 || coll.id == 12 || coll.id == 13;
      const auto factor = static_cast<std::uint64_t>(all_ranks ? r->where.world : 1);
      it->second.notes.push_back(exporting::row_text(t, *r) + (a.how.empty() ? "" : " (" + a.how + ")"));
      for (piece p : exporting::ompi_pieces(*r, a, coll.id)) {
        it->second.notes.push_back("  " + std::to_string(p.min_bytes) + "-" + exporting::bytes_text(p.max_bytes) +
                                   " B -> " + (p.peer.empty() ? "fixed rules: " : p.peer + " (") + p.why +
                                   (p.peer.empty() ? "" : ")"));
        p.min_bytes = exporting::scaled_min(p.min_bytes, factor);
        p.max_bytes = exporting::scaled_max(p.max_bytes, factor);
        it->second.rules.push_back(std::move(p));
      }
    }
  }
  std::vector<ompi_block> out;
  for (auto& [key, block] : blocks) out.push_back(std::move(block));
  return out;
}

//! "single-node", "one-per-node" or "any": what JSON rules may say of a layout.
[[nodiscard]] inline std::string_view ompi_distribution(const layout& l) {
  if (l.nodes == 1) return "single-node";
  if (l.ranks_per_node == 1) return "one-per-node";
  return "any";
}

[[nodiscard]] inline std::string ompi_rules(const table& t, const ompi_export_options& o) {
  std::string out =
      "# Open MPI coll/tuned dynamic rules, classic format: --mca coll_tuned_use_dynamic_rules 1\n"
      "#   --mca coll_tuned_dynamic_rules_filename <this file>\n";
  for (const auto& line : exporting::provenance_lines(t, "Open MPI coll/tuned", o.dtypes)) out += "# " + line + "\n";
  out += "# Open MPI <= 5.0 reads the communicator sizes below as meant; for Open MPI 6.0 use the JSON export\n";
  // per collective: the blocks it writes, one layout per world (the first one of each world)
  std::map<int, std::vector<const ompi_block*>> by_coll;
  std::string skipped;
  const auto blocks = exporting::ompi_blocks(t, o.dtypes);
  for (const auto& b : blocks) {
    auto& list = by_coll[b.coll.id];
    if (!b.says_anything()) {
      skipped += "# " + std::string(b.coll.name) + " on " + exporting::layout_text(b.where) +
                 ": nothing to say, Open MPI keeps its fixed rules\n";
    } else if (!list.empty() && list.back()->where.world == b.where.world) {
      skipped += "# " + std::string(b.coll.name) + " on " + exporting::layout_text(b.where) +
                 " not written: the classic format tells layouts apart only by size, " +
                 exporting::layout_text(list.back()->where) + " has it (the JSON export can tell 1xN and Nx1 apart)\n";
    } else {
      list.push_back(&b);
    }
  }
  std::erase_if(by_coll, [](const auto& entry) { return entry.second.empty(); });
  out += skipped;
  const auto fixed_block = [&](int from, const char* why) {
    out += std::to_string(from) + " # communicator size " + std::to_string(from) + why + ": Open MPI's fixed rules\n";
    out += "1 # number of message sizes\n0 0 0 0 # from 0 B: alg 0\n";
  };
  out += std::to_string(by_coll.size()) + " # number of collectives\n";
  for (const auto& [id, list] : by_coll) {
    out += "\n" + std::to_string(id) + " # collective id: " + std::string(list.front()->coll.name) + "\n";
    // a fixed-rules block below each measured size unless the previous one ends there, one after the last
    std::size_t n_sizes = 1;
    int next = 0;
    for (const ompi_block* b : list) {
      n_sizes += (b->where.world > next ? 2 : 1);
      next = b->where.world + 1;
    }
    out += std::to_string(n_sizes) + " # number of communicator sizes\n";
    next = 0;
    for (const ompi_block* b : list) {
      if (b->where.world > next) fixed_block(next, " and up to the next size");
      for (const auto& note : b->notes) out += exporting::clipped("# " + note, 400) + "\n";
      // contiguous message rules from 0: a gap (a hand-written table) is fixed rules
      std::vector<std::pair<std::uint64_t, int>> starts;  // (from, alg)
      std::uint64_t covered = 0;
      for (const piece& p : b->rules) {
        if (p.min_bytes > covered) starts.emplace_back(covered, 0);
        starts.emplace_back(p.min_bytes, p.peer.empty() ? 0 : p.peer_id);
        covered = p.max_bytes == unbounded ? unbounded : p.max_bytes + 1;
      }
      if (covered != unbounded) starts.emplace_back(covered, 0);
      out += std::to_string(b->where.world) + " # communicator size " + std::to_string(b->where.world) + ": " +
             exporting::layout_text(b->where) + "\n";
      out += std::to_string(starts.size()) + " # number of message sizes\n";
      for (const auto& [from, alg] : starts)
        out += std::to_string(from) + " " + std::to_string(alg) + " 0 0 # from " + std::to_string(from) + " B: alg " +
               std::to_string(alg) + "\n";
      next = b->where.world + 1;
    }
    fixed_block(next, " and up");
  }
  return out;
}

[[nodiscard]] inline std::string ompi_json(const table& t, const ompi_export_options& o) {
  const auto blocks = exporting::ompi_blocks(t, o.dtypes);
  std::map<int, std::vector<const ompi_block*>> by_coll;
  for (const auto& b : blocks) {
    if (!b.says_anything()) continue;
    auto& list = by_coll[b.coll.id];
    const auto same = [&](const ompi_block* other) {
      return other->where.world == b.where.world &&
             exporting::ompi_distribution(other->where) == exporting::ompi_distribution(b.where);
    };
    if (std::none_of(list.begin(), list.end(), same)) list.push_back(&b);
  }
  const auto rank = [](const ompi_block* b) {
    const auto d = exporting::ompi_distribution(b->where);
    return std::tuple(b->where.world, d == "any" ? 2 : d == "one-per-node" ? 1 : 0);
  };
  std::string out = "{\n  \"rule_file_version\": 3,\n  \"module\": \"tuned\",\n  \"collectives\": {";
  bool first_coll = true;
  for (auto& [id, list] : by_coll) {
    std::stable_sort(list.begin(), list.end(),
                     [&](const ompi_block* a, const ompi_block* b) { return rank(a) < rank(b); });
    out += std::string(first_coll ? "" : ",") + "\n    \"" + std::string(list.front()->coll.name) + "\": [";
    first_coll = false;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const ompi_block& b = *list[i];
      out += std::string(i ? "," : "") + "\n      {\"comm_size_min\": " + std::to_string(b.where.world) +
             ", \"comm_size_max\": " + std::to_string(b.where.world) + ", \"comm_rank_distribution\": \"" +
             std::string(exporting::ompi_distribution(b.where)) + "\", \"rules\": [";
      bool first_rule = true;
      for (const piece& p : b.rules) {
        if (p.peer.empty()) continue;  // no rule: Open MPI's fixed rules
        const std::string hi = p.max_bytes == unbounded ? "\"inf\"" : std::to_string(p.max_bytes);
        out += std::string(first_rule ? "" : ",") + "\n        {\"msg_size_min\": " + std::to_string(p.min_bytes) +
               ", \"msg_size_max\": " + hi + ", \"alg\": \"" + p.peer + "\"}";
        first_rule = false;
      }
      out += "\n      ]}";
    }
    out += "\n    ]";
  }
  out += "\n  }\n}\n";
  return out;
}

}  // namespace exporting

//! The classic rules file (every Open MPI release; see the file comment for 6.0).
[[nodiscard]] inline std::string to_ompi_rules(const table& t, const ompi_export_options& o = {}) {
  return exporting::ompi_rules(t, o);
}

//! The Open MPI 6.0 JSON rules file (see the file comment).
[[nodiscard]] inline std::string to_ompi_json(const table& t, const ompi_export_options& o = {}) {
  return exporting::ompi_json(t, o);
}

}  // namespace tutti::tuner
