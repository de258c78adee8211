//! @file exchange.hpp  Every rank sends one fixed-size item to every other: the all-to-all of small
//! records that the communicator's argument check and hierarchical's node discovery both need.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"

namespace tutti::transport {

//! After a deadline in exchange_with_all: every rank whose item had not arrived (tested without
//! waiting), so the error names all the ranks that never took part, not only the first.
template <class Transport>
std::string still_missing(Transport& t, std::vector<typename Transport::request>& pending, std::size_t from,
                          std::size_t first_late) {
  std::string ranks = std::to_string(first_late);
  std::size_t count = 1;
  for (std::size_t i = from; i < pending.size(); ++i) {
    if (i % 2 != 0 || i / 2 == first_late) continue;  // receives only: [recv p, send p] per peer
    bool arrived = false;
    try {
      arrived = t.test(pending[i]);
    } catch (const error&) {
    }
    if (!arrived) {
      ranks += ", " + std::to_string(i / 2);
      ++count;
    }
  }
  return (count == 1 ? "nothing had arrived from rank " : "nothing had arrived from ranks ") + ranks;
}

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
  for (std::size_t i = 0; i < pending.size(); ++i) {
    try {
      t.wait(pending[i], until);
    } catch (const timeout& e) {
      throw timeout(std::string(e.what()) + "; " + still_missing(t, pending, i + 1, i / 2));
    }
  }
}

}  // namespace tutti::transport
