//! @file agree_table.hpp  algorithm::tuned's check, when a communicator is made, that every rank
//! read the same tuning table — and could read one at all.
//!
//! Every rank sends every other one fixed-size record (tags::tuning_table): its table's hash and
//! source, or the error that kept it from reading one, and its node's cores. So a rank that cannot
//! read TUTTI_TUNING_FILE makes every rank fail at once with its error, instead of the others
//! waiting for it until TUTTI_TIMEOUT; and ranks that read different tables all get one
//! tutti::mismatch naming both hashes and both files.
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/tags.hpp"
#include "tutti/transport/exchange.hpp"
#include "tutti/tuner/table_write.hpp"

namespace tutti::algorithm::tuned_table {

//! One rank's record.
struct identity {
  std::uint64_t hash = 0;
  std::uint32_t cores = 0;  //!< std::thread::hardware_concurrency() on its node, 0 when unknown
  std::uint8_t unreadable = 0;  //!< 1: `text` is why it has no table
  char text[243]{};  //!< the table's source (a file name), or the error; cut to fit
};

//! What this rank read: a hash and source, or (`error` non-empty) why it read nothing.
struct reading {
  std::uint64_t hash = 0;
  std::string source;
  std::string error;
};

//! Exchanges the records and judges them identically on every rank: a rank that could not read
//! its table -> invalid_argument with its error (the first such rank; that rank itself throws its
//! whole message); different hashes -> mismatch naming rank 0's and the first differing rank's.
//! `who` names the algorithm in messages. Returns the fewest cores of any rank's node (0: unknown),
//! which the cost model's oversubscription term then reads alike everywhere. Not over a transport
//! that carries device memory only (nccl): it cannot carry host records; there each rank trusts
//! its own table and the cores are unknown.
template <class Ctx>
unsigned agree(Ctx& c, std::string_view who, const reading& mine) {
  const std::string prefix = c.where() + std::string(who) + ": ";
  if constexpr (Ctx::transport_type::traits.device_memory) {
    if (!mine.error.empty()) throw invalid_argument(prefix + mine.error);
    return 0;
  } else {
    const unsigned cores = std::thread::hardware_concurrency();
    std::vector<identity> all(static_cast<std::size_t>(c.size()));
    identity& own = all[static_cast<std::size_t>(c.rank())];
    own.hash = mine.hash;
    own.cores = cores;
    own.unreadable = mine.error.empty() ? 0 : 1;
    (mine.error.empty() ? mine.source : mine.error).copy(own.text, sizeof own.text - 1);
    if (c.size() > 1) {
      std::vector<typename Ctx::request> pending;
      const std::string during = prefix + "while checking that every rank has the same tuning table: ";
      try {
        transport::exchange_with_all(c.transport(), tags::tuning_table, std::span(all), c.until(), pending);
      } catch (const peer_lost& e) {
        throw peer_lost(e.peer(), during + e.what());
      } catch (const timeout& e) {
        throw timeout(during + e.what());
      }
    }
    for (std::size_t r = 0; r < all.size(); ++r)
      if (all[r].unreadable) {
        if (static_cast<int>(r) == c.rank()) throw invalid_argument(prefix + mine.error);
        throw invalid_argument(prefix + rank_text(static_cast<int>(r)) + " could not read its tuning table: " +
                               all[r].text);
      }
    for (std::size_t r = 1; r < all.size(); ++r)
      if (all[r].hash != all[0].hash)
        throw mismatch(prefix + "the ranks read different tuning tables: rank 0 has table " +
                       tuner::hash_text(all[0].hash) + " (" + all[0].text + "), " + rank_text(static_cast<int>(r)) +
                       " has table " + tuner::hash_text(all[r].hash) + " (" + all[r].text +
                       "); give every rank the same TUTTI_TUNING_FILE");
    unsigned fewest = cores;
    for (const auto& r : all) fewest = std::min<unsigned>(fewest, r.cores);
    return fewest;
  }
}

}  // namespace tutti::algorithm::tuned_table
