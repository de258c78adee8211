//! @file export_nccl.hpp  A tuning table as the CSV file NCCL's example tuner plugin reads
//! (NCCL plugins/tuner/example, NCCL_TUNER_CONFIG_FILE).
//!
//! One line per configuration, as that plugin's loadConfig reads it:
//! `collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff`.
//! The plugin reads lines with fgets into 256 bytes, skips a line only when its first character
//! is '#' or it is empty, takes the first line that matches a call (sizes inclusive at both ends,
//! -1 a wildcard) and reads an unknown collective or algorithm name as allreduce or ring — so
//! this writer never writes a line longer than 250 characters and never a collective NCCL lacks.
//! NCCL counts allgather's and reducescatter's bytes over all ranks (ncclFuncMaxSendRecvCount),
//! tutti per rank: those ranges are multiplied by the world size. Rows with no NCCL counterpart
//! are comment lines saying why; NCCL keeps its own choice there.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/tuner/export_common.hpp"

namespace tutti::tuner {

struct nccl_export_options {
  dtype_class dtypes = dtype_class::floating;  //!< NCCL's tuner does not see the element type
  //! NCCL chooses an (algorithm, protocol) pair and the plugin can only prefer a pair: tutti has
  //! no protocols, so one is written for every line. "simple" moves data as tutti's schedules do;
  //! "ll" or "ll128" trade bandwidth for latency.
  std::string protocol = "simple";
};

namespace exporting {

//! The plugin's name of each collective (tutti::collective's order), "" where its tuner is never
//! asked (barrier, alltoall).
inline constexpr std::array<std::string_view, collective_kinds_exported> nccl_names{
    "allreduce", "reducescatter", "allgather", "broadcast", "", "reduce", ""};
[[nodiscard]] inline std::string_view nccl_collective(collective c) { return nccl_names[static_cast<std::size_t>(c)]; }

//! tutti's algorithm on this row -> NCCL's (docs/tuning.md has the table).
[[nodiscard]] inline std::vector<piece> nccl_pieces(const row& r, const resolved& a) {
  const collective c = r.collective_kind;
  const auto to = [&](std::string peer, std::string why) {
    piece p;
    p.peer = std::move(peer);
    p.why = std::move(why);
    return exporting::whole(r, std::move(p));
  };
  if (exporting::nccl_collective(c).empty())
    return exporting::none(r, "NCCL's tuner plugin is never asked about " + std::string(name_of(c)));
  const std::string& base = a.name.base;
  if (base == "ring") return to("ring", "exact: NCCL's ring, pipelined in chunks as tutti's");
  if (base == "tree") {
    if (c == collective::allreduce) return to("tree", "exact: NCCL's tree is the same pipelined double binary tree");
    return exporting::none(r, "NCCL has no tree " + std::string(name_of(c)) + " (its tree is for allreduce only)");
  }
  if (base == "halving_doubling") {
    if (c == collective::allreduce)
      return to("tree", "nearest: log-latency like recursive halving-doubling, which NCCL does not have");
    if ((c == collective::allgather || c == collective::reduce_scatter) && r.where.ranks_per_node == 1)
      return to("pat", "nearest: NCCL's PAT is a log-step schedule (protocol simple only)");
    if (c == collective::allgather || c == collective::reduce_scatter)
      return exporting::none(r,
                             "NCCL's log-step PAT runs only with one rank per node (NCCL_PAT_ENABLE, graph/tuning.cc)");
    return exporting::none(r, "NCCL has no log-latency " + std::string(name_of(c)));
  }
  if (base == "direct")
    return exporting::none(r,
                           "direct reads peers' memory in place; NCCL has no such algorithm (nvls is nearest in "
                           "spirit, on NVSwitch only)");
  if (base == "hierarchical" && a.name.args.size() == 2) {
    const std::string& across = a.name.args[1].base;
    if (across == "ring")
      return to("ring", "nearest: NCCL's rings already cross each node boundary once, as hierarchical<..., ring> does");
    if ((across == "tree" || across == "halving_doubling") && c == collective::allreduce)
      return to("tree", "nearest: NCCL's tree is a chain inside each node and a double binary tree across nodes");
    return exporting::none(r, a.name.text() + " has no NCCL counterpart for " + std::string(name_of(c)));
  }
  return exporting::none(r, "no NCCL counterpart known for " + a.name.text());
}

[[nodiscard]] inline std::string nccl_csv(const table& t, const nccl_export_options& o) {
  if (o.protocol != "simple" && o.protocol != "ll" && o.protocol != "ll128")
    throw invalid_argument("NCCL export: protocol \"" + o.protocol + "\" is not one of simple, ll, ll128");
  constexpr std::size_t line_limit = 250;  // the plugin's fgets reads 255 characters a line
  const std::string simple = "simple";
  std::string out;
  const auto comment = [&](const std::string& text) { out += exporting::clipped("# " + text, line_limit) + "\n"; };
  comment("NCCL tuner plugin configuration (NCCL plugins/tuner/example; NCCL_TUNER_CONFIG_FILE=<this file>)");
  for (const auto& line : exporting::provenance_lines(t, "NCCL", o.dtypes)) comment(line);
  comment("protocol " + o.protocol + " on every line: tutti has no protocols, the plugin must name one");
  comment("collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff");
  for (const row* r : exporting::rows_to_export(t, o.dtypes)) {
    const resolved a = exporting::resolve_row(t, *r);
    const std::string head = exporting::row_text(t, *r) + " on " + exporting::layout_text(r->where) +
                             (a.how.empty() ? "" : " (" + a.how + ")");
    const bool all_ranks =
        r->collective_kind == collective::allgather || r->collective_kind == collective::reduce_scatter;
    const auto factor = static_cast<std::uint64_t>(all_ranks ? r->where.world : 1);
    out += "\n";
    comment(head);
    for (const piece& p : exporting::nccl_pieces(*r, a)) {
      const std::string sizes = std::to_string(p.min_bytes) + "-" + exporting::bytes_text(p.max_bytes) + " B";
      if (p.peer.empty()) {
        comment("  " + sizes + ": no NCCL counterpart, NCCL keeps its own choice: " + p.why);
        continue;
      }
      comment("  " + sizes + " -> " + p.peer + " (" + p.why + ")" +
              (factor > 1 ? "; NCCL counts bytes over all ranks" : ""));
      const std::uint64_t lo = exporting::scaled_min(p.min_bytes, factor),
                          hi = exporting::scaled_max(p.max_bytes, factor);
      const std::string& protocol = p.peer == "pat" ? simple : o.protocol;  // NCCL runs PAT with simple only
      out += std::string(exporting::nccl_collective(r->collective_kind)) + "," + std::to_string(lo) + "," +
             std::to_string(hi) + "," + p.peer + "," + protocol + ",-1," + std::to_string(r->where.nodes) + "," +
             std::to_string(r->where.world) + ",-1,-1\n";
    }
  }
  return out;
}

}  // namespace exporting

//! The table's rows for `o.dtypes` as NCCL tuner-plugin CSV (see the file comment). Throws
//! invalid_argument for a protocol NCCL does not name (the plugin would silently read "simple").
[[nodiscard]] inline std::string to_nccl_csv(const table& t, const nccl_export_options& o = {}) {
  return exporting::nccl_csv(t, o);
}

}  // namespace tutti::tuner
