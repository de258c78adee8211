//! @file unique_id.hpp  The ncclUniqueId every rank of a communicator needs, shared through a Store.
//!
//! Rank 0 asks NCCL for the id (ncclGetUniqueId opens NCCL's bootstrap listener; it needs no GPU)
//! and sets it under `<prefix>/unique_id`; the others wait for that key until the deadline. The
//! prefix is the transport's key scope, so two communicators in one store never share an id.
#pragma once
#include <nccl.h>

#include <cstring>
#include <string>

#include "tutti/bootstrap/concepts.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/transport/nccl/error.hpp"

namespace tutti::transport::nccl_detail {

template <class Store>
[[nodiscard]] ncclUniqueId exchange_unique_id(int rank, Store& store, const std::string& prefix, deadline until) {
  static_assert(bootstrap::check_store<Store>());
  const std::string key = prefix + "/unique_id";
  ncclUniqueId id{};
  if (rank == 0) {
    TUTTI_NCCL_CHECK(rank, "bootstrap", ncclGetUniqueId(&id));
    const auto* p = reinterpret_cast<const unsigned char*>(&id);
    store.set(key, bootstrap::store_bytes(p, p + sizeof id));
    return id;
  }
  bootstrap::store_bytes bytes;
  try {
    bytes = store.get(key, until);
  } catch (const timeout& e) {
    throw timeout(on_rank(rank) + "transport::nccl: rank 0 did not publish the ncclUniqueId (" +
                  key + ") before the deadline (TUTTI_TIMEOUT; is it running, with the same key prefix?): " + e.what());
  }
  if (bytes.size() != sizeof id)
    throw transport_error(on_rank(rank) + "transport::nccl: " + key + " holds " +
                          std::to_string(bytes.size()) + " bytes, not an ncclUniqueId (" + std::to_string(sizeof id) +
                          " bytes): another program uses this key?");
  std::memcpy(&id, bytes.data(), sizeof id);
  return id;
}

}  // namespace tutti::transport::nccl_detail
