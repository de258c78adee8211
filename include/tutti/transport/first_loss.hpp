//! @file first_loss.hpp  Which rank of a job was lost first, recorded once in the job's store.
//!
//! A rank that sees a peer die aborts, and the ranks waiting on *it* then see it vanish: without a
//! record each would blame its own neighbour. The first rank to see a loss records it; the others
//! read the record and name the real culprit. Every store call is bounded by failure_store_wait:
//! the store's server may be what died. A store that does not answer is evidence in itself: the
//! process serving it is gone, and that rank (when the store knows it) is the one named.
#pragma once
#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include "tutti/bootstrap/store_calls.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/message.hpp"

namespace tutti::transport {

//! What a failure path gives the store: ample for a live server on any network, short enough
//! that the survivors of a dead server leave within about a second.
inline constexpr std::chrono::milliseconds failure_store_wait{1000};

//! `self` saw `peer` lost (`what` says how). Returns the rank to name and the text to say; sets
//! `store_failed` when the store did not answer (the caller then skips its other store steps).
[[nodiscard]] inline std::pair<int, std::string> first_loss(const bootstrap::store_ops& store, const std::string& key,
                                                           int self, int peer, const std::string& what,
                                                           bool& store_failed) {
  try {
    if (store.add(key + "/count", 1, deadline::after(failure_store_wait)) == 1) {
      const std::string record = std::to_string(peer) + " " + what;
      store.set(key, bootstrap::store_bytes(record.begin(), record.end()), deadline::after(failure_store_wait));
      return {peer, what};
    }
    const auto bytes = store.get(key, deadline::after(2 * failure_store_wait));
    const std::string record(bytes.begin(), bytes.end());
    const auto space = record.find(' ');
    const int first = std::stoi(record.substr(0, space));
    if (first == peer) return {peer, what};
    return {first, rank_text(first) + " was lost first (" + record.substr(space + 1) +
                       "); here that showed as: " + what};
  } catch (const std::exception&) {
    store_failed = true;
    const int server = store.server_rank;
    if (server < 0 || server == self || server == peer) return {peer, what};
    // The loss could not be recorded because the store's own process is gone: that rank died,
    // and the neighbour this rank saw vanish was most likely only aborting because of it.
    return {server, rank_text(server) + ", whose process serves the job's store, is lost: the store did not answer within " +
                        std::to_string(failure_store_wait.count()) + " ms; here that showed as: " + what};
  }
}

}  // namespace tutti::transport
