//! @file pool.hpp  First-fit allocator over the registered region of this rank's segment.
#pragma once
#include <cstddef>
#include <iterator>
#include <map>
#include <string>

#include "tutti/core/error.hpp"

namespace tutti::transport::shm_detail {

//! Hands out 64-byte-aligned blocks of [0, capacity) as offsets; adjacent free blocks coalesce.
//! Process-local bookkeeping: only the owning rank allocates from its pool.
class offset_pool {
 public:
  static constexpr std::size_t alignment = 64;

  explicit offset_pool(std::size_t capacity = 0) : capacity_(capacity) {
    if (capacity) free_[0] = capacity;
  }

  //! Returns the offset of a block of at least `bytes`; throws tutti::error when none is free.
  [[nodiscard]] std::size_t allocate(std::size_t bytes) {
    const std::size_t need = bytes ? (bytes + alignment - 1) & ~(alignment - 1) : alignment;
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < need) continue;
      const std::size_t offset = it->first, left = it->second - need;
      free_.erase(it);
      if (left) free_[offset + need] = left;
      used_[offset] = need;
      return offset;
    }
    throw invalid_argument("transport::shm: the registered pool has no free block of " + std::to_string(bytes) +
                           " bytes (capacity " + std::to_string(capacity_) + "; raise TUTTI_SHM_POOL_BYTES)");
  }

  //! Returns a block; a pointer that was not allocated here is an error, not silently ignored.
  void deallocate(std::size_t offset) {
    auto u = used_.find(offset);
    if (u == used_.end())
      throw invalid_argument("transport::shm: deallocate of offset " + std::to_string(offset) +
                             " that the pool did not hand out");
    std::size_t size = u->second;
    used_.erase(u);
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && offset + size == next->first) {
      size += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += size;
        return;
      }
    }
    free_[offset] = size;
  }

  //! The allocated block containing [offset, offset + bytes), if any: lets a collective tell
  //! whether a user buffer is registered.
  [[nodiscard]] bool contains(std::size_t offset, std::size_t bytes) const {
    auto it = used_.upper_bound(offset);
    if (it == used_.begin()) return false;
    --it;
    return offset + bytes <= it->first + it->second;
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::size_t in_use() const noexcept {
    std::size_t n = 0;
    for (const auto& [o, s] : used_) n += s;
    return n;
  }

 private:
  std::size_t capacity_;
  std::map<std::size_t, std::size_t> free_;  //!< offset -> size
  std::map<std::size_t, std::size_t> used_;  //!< offset -> size
};

}  // namespace tutti::transport::shm_detail
