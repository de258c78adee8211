//! @file c10d_channel.hpp  torch's c10d Store as a rendezvous channel (tutti/bootstrap/channel_rendezvous.hpp):
//! what the group's ranks publish to each other before any tutti transport exists (node ids, the
//! job id, and across hosts the network agreement and rank 0's tcp_store port and key).
//!
//! put(key, value) sets "tutti/rdv/<key>/<rank>" in the group's store (init_process_group gives
//! each group its own prefix); fence(until, what) sets "tutti/fence/<n>/<rank>" and waits, bounded
//! by `until`, until every rank's has appeared; get(rank, key) reads what `rank` put.
#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include <tutti/core/deadline.hpp>
#include <tutti/core/error.hpp>

namespace tutti_torch {

class c10d_channel {
 public:
  c10d_channel(c10d::Store& store, int rank, int world) : store_(store), rank_(rank), world_(world) {}

  void put(const std::string& key, const std::string& value) {
    store_.set(slot(key, rank_), std::vector<uint8_t>(value.begin(), value.end()));
  }
  void commit() {}  // every put is visible at once

  void fence(tutti::deadline until, const std::string& what) {
    const std::string key = "tutti/fence/" + std::to_string(fences_++);
    store_.set(key + "/" + std::to_string(rank_), std::vector<uint8_t>{});
    std::vector<std::string> keys;
    for (int r = 0; r < world_; ++r) keys.push_back(key + "/" + std::to_string(r));
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until.at() - tutti::deadline::clock::now());
    try {
      store_.wait(keys, std::max(left, std::chrono::milliseconds(1)));
    } catch (const std::exception& e) {
      std::string missing;
      for (int r = 0; r < world_; ++r)
        if (!store_.check({keys[static_cast<std::size_t>(r)]})) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      throw tutti::timeout("tutti: rank " + std::to_string(rank_) + ": torch's store: " + what + ": rank(s) " +
                           (missing.empty() ? std::string("?") : missing) + " of " + std::to_string(world_) +
                           " did not arrive before the deadline (" + e.what() + ")");
    }
  }

  [[nodiscard]] std::string get(int rank, const std::string& key) {
    const auto bytes = store_.get(slot(key, rank));
    return {bytes.begin(), bytes.end()};
  }

  //! Every rank's value for `key` (each rank puts it, then this fences and reads them all).
  [[nodiscard]] std::vector<std::string> all_gather(const std::string& key, const std::string& mine,
                                                    tutti::deadline until, const std::string& what) {
    put(key, mine);
    fence(until, what);
    std::vector<std::string> all;
    for (int r = 0; r < world_; ++r) all.push_back(get(r, key));
    return all;
  }

 private:
  [[nodiscard]] static std::string slot(const std::string& key, int rank) {
    return "tutti/rdv/" + key + "/" + std::to_string(rank);
  }

  c10d::Store& store_;
  int rank_;
  int world_;
  int fences_ = 0;
};

}  // namespace tutti_torch
