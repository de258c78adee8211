//! @file pool.hpp  First-fit allocator over the registered region of this rank's segment.
#pragma once
#include <cstddef>
#include <deque>
#include <iterator>
#include <map>
#include <string>
#include <utility>

#include "tutti/core/error.hpp"

namespace tutti::transport::shm_detail {

//! Hands out aligned blocks of [0, capacity) as offsets; adjacent free blocks coalesce.
//! Process-local bookkeeping: only the owning rank allocates from its pool.
//!
//! Debug mode (TUTTI_DEBUG_POOL=1, transport::shm): blocks are whole pages, so the transport can
//! poison and mprotect a freed block, and freed blocks wait in a quarantine (up to a quarter of
//! the pool) before they are handed out again: a write through a pointer kept after deallocate()
//! faults at that write instead of corrupting the next allocation, and a second deallocate() of
//! the same pointer is named as a double free.
class offset_pool {
 public:
  static constexpr std::size_t alignment = 64;
  static constexpr std::size_t debug_alignment = 4096;

  explicit offset_pool(std::size_t capacity = 0, bool debug = false)
      : capacity_(capacity), align_(debug ? debug_alignment : alignment), debug_(debug) {
    if (capacity) free_[0] = capacity;
  }

  [[nodiscard]] bool debug() const noexcept { return debug_; }

  //! Returns the offset of a block of at least `bytes`; throws invalid_argument when none is free.
  [[nodiscard]] std::size_t allocate(std::size_t bytes) {
    const std::size_t need = bytes ? (bytes + align_ - 1) & ~(align_ - 1) : align_;
    for (int attempt = 0; attempt < 2; ++attempt) {
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->second < need) continue;
        const std::size_t offset = it->first, left = it->second - need;
        free_.erase(it);
        if (left) free_[offset + need] = left;
        used_[offset] = need;
        return offset;
      }
      if (quarantine_.empty()) break;
      while (!quarantine_.empty()) release_oldest();  // the quarantine gives way before the pool says no
    }
    throw invalid_argument("transport::shm: the registered pool has no free block of " + std::to_string(bytes) +
                           " bytes (capacity " + std::to_string(capacity_) + "; raise TUTTI_SHM_POOL_BYTES)");
  }

  //! Size of the block handed out at `offset` (0 when none is).
  [[nodiscard]] std::size_t block_size(std::size_t offset) const {
    const auto u = used_.find(offset);
    return u == used_.end() ? 0 : u->second;
  }

  //! Returns the block at `offset` and its size. An offset that is not the start of a block in
  //! use is an invalid_argument saying which mistake it is (double free, inside a block, never).
  std::size_t deallocate(std::size_t offset) {
    auto u = used_.find(offset);
    if (u == used_.end()) throw invalid_argument(why_not_allocated(offset));
    const std::size_t size = u->second;
    used_.erase(u);
    if (debug_) {
      quarantine_.emplace_back(offset, size);
      quarantined_ += size;
      while (quarantined_ > capacity_ / 4 && quarantine_.size() > 1) release_oldest();
    } else {
      release(offset, size);
    }
    return size;
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
  [[nodiscard]] std::string why_not_allocated(std::size_t offset) const {
    for (const auto& [o, s] : quarantine_)
      if (o == offset) return "this block was already returned (double free)";
    if (auto f = free_.upper_bound(offset); f != free_.begin() && std::prev(f)->first + std::prev(f)->second > offset)
      return std::prev(f)->first == offset ? "this block was already returned (double free)"
                                           : "this pointer lies in free memory of the pool: it was never handed out, or its "
                                             "block was already returned";
    if (auto b = used_.upper_bound(offset); b != used_.begin() && std::prev(b)->first + std::prev(b)->second > offset)
      return "this pointer lies inside the block handed out at pool offset " + std::to_string(std::prev(b)->first) +
             " (deallocate takes the pointer allocate returned)";
    return "this pointer was never handed out by allocate";
  }

  void release_oldest() {
    const auto [offset, size] = quarantine_.front();
    quarantine_.pop_front();
    quarantined_ -= size;
    release(offset, size);
  }

  void release(std::size_t offset, std::size_t size) {
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

  std::size_t capacity_;
  std::size_t align_;
  bool debug_;
  std::map<std::size_t, std::size_t> free_;  //!< offset -> size
  std::map<std::size_t, std::size_t> used_;  //!< offset -> size
  std::deque<std::pair<std::size_t, std::size_t>> quarantine_;  //!< debug: freed, not yet reusable
  std::size_t quarantined_ = 0;
};

}  // namespace tutti::transport::shm_detail
