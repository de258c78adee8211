//! @file logging.hpp  What a communicator says at info (once: what it is), debug and trace (per collective).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/core/collective_traits.hpp"
#include "tutti/core/log.hpp"

namespace tutti::detail {

//! "2 nodes of 2 ranks each", "2 nodes of 3 and 1 ranks", "1 node of 4 ranks".
inline std::string nodes_in_words(const std::vector<std::vector<int>>& members) {
  const std::size_t n = members.size();
  std::string text = std::to_string(n);
  text += n == 1 ? " node of " : " nodes of ";
  const bool even = std::all_of(members.begin(), members.end(), [&](const auto& m) { return m.size() == members[0].size(); });
  for (std::size_t k = 0; k < (even ? std::min<std::size_t>(n, 1) : n); ++k) {
    if (k) text += k + 1 == n ? " and " : ", ";
    text += std::to_string(members[k].size());  // appended piece by piece: GCC 12's -Wrestrict false positive
  }
  text += even && n > 1 ? " ranks each" : " ranks";
  return text;
}

//! The transport concept does not ask for a name: a user's transport may have none.
template <class Transport>
std::string transport_name() {
  if constexpr (requires { std::string(Transport::name); }) return std::string(Transport::name);
  else return "(a transport without a name)";
}

//! At info, one line per communicator: who it is, what it is made of (what an algorithm such as
//! automatic resolved to, when it says), where it runs.
template <class Algorithm, class Codec, class Fusion, class Transport>
void announce(const Transport& t, const std::string& origin) {
  if (!log_enabled(log_level::info)) return;
  std::string algorithm(Algorithm::name);
  if constexpr (requires { std::string(Algorithm::resolved(t)); })
    algorithm += " (" + std::string(Algorithm::resolved(t)) + ")";
  std::string line = "communicator: rank " + std::to_string(t.rank()) + " of " + std::to_string(t.world_size()) +
                     "; transport " + transport_name<Transport>() + " (" + origin + "); algorithm " + algorithm +
                     "; codec " + std::string(Codec::name) + "; fusion " + std::string(Fusion::name);
  if constexpr (requires { t.nodes().members; }) line += "; " + nodes_in_words(t.nodes().members);
  if constexpr (requires { std::string(t.node_id()); }) line += "; node " + std::string(t.node_id());
  log(log_level::info, t.rank(), line);
}

//! "allreduce #5: 1048576 float, op sum, algorithm ring" (no rank: the logger prefixes it).
inline std::string summary(const collective_descriptor& d, std::string_view algorithm) {
  const auto kind = static_cast<collective>(d.kind);
  std::string text = std::string(name_of(kind)) + " #" + std::to_string(d.sequence) + ": " +
                     std::to_string(d.count) + " " + std::string(name_of(static_cast<dtype>(d.type)));
  if (is_reducing(kind)) text += ", op " + std::string(name_of(static_cast<op>(d.reduction)));
  if (d.root >= 0) text += ", root " + std::to_string(d.root);
  return text + ", algorithm " + std::string(algorithm);
}

//! trace: a collective's start. Out of line, like log_took: a collective that logs nothing only
//! tests two levels (communicator.hpp's run()).
inline void log_start(int rank, const collective_descriptor& d, std::string_view algorithm) {
  log(log_level::trace, rank, "start " + summary(d, algorithm));
}

//! debug: one line per collective, with its duration.
inline void log_took(int rank, const collective_descriptor& d, std::string_view algorithm,
                     std::chrono::steady_clock::time_point started) {
  char took[32];
  std::snprintf(took, sizeof took, "%.3f ms",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
  log(log_level::debug, rank, summary(d, algorithm) + ": " + took);
}

}  // namespace tutti::detail
