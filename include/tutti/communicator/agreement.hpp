//! @file agreement.hpp  The cross-rank argument check: every rank's descriptor seen by every rank.
//!
//! Unless TUTTI_CHECK=0 (or the algorithm carries the descriptors in its own first
//! synchronisation), each collective exchanges a 32-byte descriptor with every peer before any data
//! moves, and all ranks judge them alike (core/collective.hpp), so ranks that disagree about the
//! call, or one that refused its own arguments, give every rank the same error.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/tags.hpp"
#include "tutti/transport/exchange.hpp"

namespace tutti::detail {

//! Throws what the ranks' agreement demands, the same on every rank.
inline void enforce(int rank, const collective_descriptor& mine, const agreement& verdict) {
  if (verdict.kind == agreement::mismatch) throw mismatch(call_prefix(rank, mine) + verdict.message);
  if (verdict.kind == agreement::refused) throw invalid_argument(call_prefix(rank, mine) + verdict.message);
}

//! The communicator's descriptors and requests, reused call after call (no allocation once grown).
template <class Transport>
struct argument_agreement {
  std::vector<collective_descriptor> descriptors;  //!< rank r's at [r]; also lent to algorithms that check
  std::vector<typename Transport::request> requests;

  //! Every rank sends its descriptor to every other (core/tags.hpp: argument_check)
  //! and compares all of them with rank 0's, so all ranks reach the same verdict and message.
  void agree(Transport& t, const collective_descriptor& mine, deadline until) {
    const int n = t.world_size(), me = t.rank();
    if (n == 1) return;
    descriptors.resize(static_cast<std::size_t>(n));
    descriptors[static_cast<std::size_t>(me)] = mine;
    transport::exchange_with_all(t, tags::argument_check, std::span(descriptors), until, requests);
    enforce(me, mine, judge(descriptors, me));
  }
};

}  // namespace tutti::detail
