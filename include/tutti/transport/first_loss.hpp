//! @file first_loss.hpp  Which rank of a job was lost first, recorded once in the job's store.
//!
//! A rank that sees a peer die aborts, and the ranks waiting on *it* then see it vanish: without a
//! record each would blame its own neighbour. The first rank to see a loss records it; the others
//! read the record and name the real culprit. Every store call is bounded by failure_store_wait:
//! the store's server may be what died.
//!
//! A store that cannot be asked is evidence in itself, of two kinds the store client tells apart:
//! - its connection closed, or a new one was refused (tutti::peer_lost from the client): the
//!   process serving it is gone, and that rank is the one named, as lost;
//! - it did not answer in time (tutti::timeout): its process is alive but stopped, or its host is
//!   out of reach. Nobody is known to be lost; the peer seen vanish most often gave up at its own
//!   deadline on that same stall (a neighbour of a stopped rank 0 times out, aborts, and the ranks
//!   beyond it see an "Endpoint timeout"), so the loss is reported as the stall it is (`silent`).
#pragma once
#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include "tutti/bootstrap/store_calls.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"

namespace tutti::transport {

//! What a failure path gives the store: ample for a live server on any network, short enough
//! that the survivors of a dead server leave within about a second.
inline constexpr std::chrono::milliseconds failure_store_wait{1000};

//! "the job's store, served by rank 0, did not answer (rank 0 stopped, or its host unreachable)":
//! the one wording of a silent store, in stall verdicts and in loss reports alike.
[[nodiscard]] inline std::string silent_store_text(int server) {
  return "the job's store, served by " + rank_text(server) + ", did not answer (" + rank_text(server) +
         " stopped, or its host unreachable)";
}

//! How the store took the question.
enum class store_answer {
  answered,
  silent,  //!< no answer within the wait: its server stopped or out of reach
  gone,    //!< its connection closed, or another failure: its server is lost
};

//! Who a failure is put down to.
struct loss_account {
  int peer = -1;         //!< the rank named
  std::string what;      //!< the text to say
  store_answer store = store_answer::answered;
};

//! The job's loss record, "<rank> <how it showed>", as first_loss writes it: the rank and the text.
[[nodiscard]] inline std::pair<int, std::string> read_loss_record(const bootstrap::store_bytes& bytes) {
  const std::string record(bytes.begin(), bytes.end());
  const auto space = record.find(' ');
  return {std::stoi(record.substr(0, space)), space == std::string::npos ? std::string() : record.substr(space + 1)};
}

//! `self` saw `peer` lost (`what` says how): the rank to name and the text to say.
[[nodiscard]] inline loss_account first_loss(const bootstrap::store_ops& store, const std::string& key, int self,
                                             int peer, const std::string& what) {
  const int server = store.server_rank;
  const bool server_elsewhere = server >= 0 && server != self;
  try {
    if (store.add(key + "/count", 1, deadline::after(failure_store_wait)) == 1) {
      const std::string record = std::to_string(peer) + " " + what;
      store.set(key, bootstrap::store_bytes(record.begin(), record.end()), deadline::after(failure_store_wait));
      return {peer, what};
    }
    const auto [first, how] = read_loss_record(store.get(key, deadline::after(2 * failure_store_wait)));
    if (first == peer) return {peer, what};
    return {first, rank_text(first) + " was lost first (" + how + "); here that showed as: " + what};
  } catch (const timeout&) {
    if (!server_elsewhere) return {peer, what, store_answer::silent};
    return {server, silent_store_text(server) + " in " + std::to_string(failure_store_wait.count()) +
                        " ms, so who was lost first cannot be learnt; here: " + what,
            store_answer::silent};
  } catch (const std::exception&) {
    if (!server_elsewhere || server == peer) return {peer, what, store_answer::gone};
    // The loss could not be recorded because the store's own process is gone: that rank died,
    // and the neighbour this rank saw vanish was most likely only aborting because of it.
    return {server, rank_text(server) + ", whose process serves the job's store, is lost: the store closed or refused "
                        "its connections; here that showed as: " + what,
            store_answer::gone};
  }
}

}  // namespace tutti::transport
