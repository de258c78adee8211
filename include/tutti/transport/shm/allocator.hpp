//! @file allocator.hpp  A standard allocator over transport::shm's registered memory, so framework
//! containers (std::vector<float, shm_allocator<float>>) hold tensors peers can read in place.
#pragma once
#include <cstddef>
#include <limits>
#include <new>

#include "tutti/transport/shm/transport.hpp"

namespace tutti::transport {

template <class T>
class shm_allocator {
 public:
  using value_type = T;

  explicit shm_allocator(shm& transport) noexcept : shm_(&transport) {}
  template <class U>
  shm_allocator(const shm_allocator<U>& other) noexcept : shm_(other.transport()) {}  // NOLINT: rebinding

  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    static_assert(alignof(T) <= 64, "shm_allocator hands out 64-byte-aligned blocks");
    return static_cast<T*>(shm_->allocate(n * sizeof(T)));  // tutti::invalid_argument when the pool is full
  }
  void deallocate(T* p, std::size_t) { shm_->deallocate(p); }

  [[nodiscard]] shm* transport() const noexcept { return shm_; }
  template <class U>
  friend bool operator==(const shm_allocator& a, const shm_allocator<U>& b) noexcept {
    return a.transport() == b.transport();
  }

 private:
  shm* shm_;
};

}  // namespace tutti::transport
