//! @file startup.hpp  transport::ucx's start-up: who this rank is, and connecting to every peer.
//!
//! One UCP context and worker per rank (worker.hpp). Each rank publishes its worker address in a
//! Store (bootstrap/concepts.hpp) under `<prefix>/addr/<rank>`, reads every peer's, and creates an
//! endpoint to each (itself included) with peer error handling (liveness.hpp), so a dead or
//! unreachable peer fails that endpoint instead of hanging it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "tutti/bootstrap/concepts.hpp"
#include "tutti/bootstrap/store_calls.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/tags.hpp"
#include "tutti/transport/ucx/options.hpp"

namespace tutti::transport::ucx_detail {

inline constexpr int tag_bits = tags::bits;  //!< tutti tags below 2^40 (core/tags.hpp); the source rank above
inline constexpr std::uint64_t tag_limit = std::uint64_t{1} << tag_bits;
inline constexpr int world_limit = 1 << (64 - tag_bits);  //!< ranks must fit the 24 bits left

//! `rank` when it and `world` fit UCX's tag (the source rank takes its top 24 bits).
inline int checked_rank(int rank, int world) {
  if (world < 1 || world >= world_limit)
    throw invalid_argument(on_rank(rank) + "transport::ucx: world_size " + std::to_string(world) +
                           " is outside [1, 2^24 = " + std::to_string(world_limit) +
                           "): the source rank takes the top 24 bits of UCX's 64-bit tag");
  if (rank < 0 || rank >= world)
    throw invalid_argument(on_rank(rank) + "transport::ucx: rank is outside [0, " + std::to_string(world) + ")");
  return rank;
}

//! Who this rank is and where its job meets: what every part of transport::ucx reads.
struct job {
  int rank;
  int world;
  std::string prefix;           //!< the store keys' prefix, the same on every rank
  ucx_options options;
  bootstrap::store_ops store;   //!< for leaving, the first loss and the shutdown barrier (the caller keeps it alive)
  unsigned spin = 1000;         //!< empty progress rounds before a wait yields the core
  bool aborted = false;         //!< abort() ran: the transport is unusable

  [[nodiscard]] std::string key(const std::string& what) const { return prefix + "/" + what; }
};

//! Publishes this rank's worker address, reads every peer's (until options.timeout), and hands
//! each to `connect_to(peer, address)`, which creates the endpoint.
template <class Store, class Worker, class Connect>
void connect(const job& j, Store& store, const Worker& worker, Connect&& connect_to) {
  const deadline until = deadline::after(j.options.timeout);
  const auto mine = worker.address();
  store.set(j.key("addr/" + std::to_string(j.rank)), bootstrap::store_bytes(mine.begin(), mine.end()));
  for (int p = 0; p < j.world; ++p) {
    bootstrap::store_bytes theirs;
    if (p == j.rank) {
      theirs.assign(mine.begin(), mine.end());
    } else {
      try {
        theirs = store.get(j.key("addr/" + std::to_string(p)), until);
      } catch (const timeout& e) {
        throw timeout(on_rank(j.rank) + "transport::ucx: rank " + std::to_string(p) +
                      " did not publish its worker address (" + j.key("addr/" + std::to_string(p)) +
                      ") before the deadline (TUTTI_TIMEOUT; is it running, with the same world size and prefix?): " +
                      e.what());
      }
    }
    connect_to(p, theirs);
  }
}

}  // namespace tutti::transport::ucx_detail
