//! @file exchange.hpp  Every rank sends one fixed-size item to every other: the all-to-all of small
//! records that the communicator's argument check and hierarchical's node discovery both need.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tutti/core/deadline.hpp"

namespace tutti::transport {

//! all[rank()] must already hold this rank's item; on return all[p] holds rank p's. `pending` is
//! the caller's reusable request storage (no allocation once it has grown).
template <class Transport, class Item>
void exchange_with_all(Transport& t, std::uint64_t tag, std::span<Item> all, deadline until,
                       std::vector<typename Transport::request>& pending) {
  const int n = t.world_size(), me = t.rank();
  pending.clear();
  pending.resize(2 * static_cast<std::size_t>(n));
  const Item& mine = all[static_cast<std::size_t>(me)];
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    pending[2 * static_cast<std::size_t>(p)] = t.recv(p, tag, &all[static_cast<std::size_t>(p)], sizeof(Item));
    pending[2 * static_cast<std::size_t>(p) + 1] = t.send(p, tag, &mine, sizeof(Item));
  }
  for (auto& r : pending) t.wait(r, until);
}

}  // namespace tutti::transport
