//! @file message.hpp  One way to begin a message: "rank 3: allreduce #12: what went wrong".
//!
//! docs/errors.md promises that every error names the rank, the collective and the value. These
//! helpers write the first two the same way everywhere, so logs and tests can rely on the shape.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/core/tags.hpp"

namespace tutti {

//! "rank 3": how a rank is named inside a sentence (a peer, a root, the rank that refused).
[[nodiscard]] inline std::string rank_text(int rank) { return "rank " + std::to_string(rank); }

//! "rank 3: " — the start of every message this rank writes.
[[nodiscard]] inline std::string on_rank(int rank) { return rank_text(rank) + ": "; }

//! "rank 3: where: " — for a component that is not a collective ("transport::ucx", "fusion engine").
[[nodiscard]] inline std::string on_rank(int rank, std::string_view where) {
  std::string s = on_rank(rank);
  s += where;
  s += ": ";
  return s;
}

//! "rank 3: allreduce #12: " — the collective by its name and its sequence number on the
//! communicator; the fusion engine's own collectives read "fused allreduce #5".
[[nodiscard]] inline std::string call_prefix(int rank, collective kind, std::uint64_t sequence) {
  std::string s = on_rank(rank);
  if (tags::is_fused(sequence)) s += "fused ";
  s += name_of(kind);
  s += " #" + std::to_string(tags::call_number(sequence)) + ": ";
  return s;
}
[[nodiscard]] inline std::string call_prefix(int rank, const collective_descriptor& d) {
  return call_prefix(rank, static_cast<collective>(d.kind), d.sequence);
}

//! "0-2, 5" for ranks {0, 1, 2, 5}.
[[nodiscard]] inline std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace tutti
