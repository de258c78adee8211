//! @file registered_buffer.hpp  registered_buffer<T>: registered memory that gives itself back.
//!
//! Owns `count` elements of T in this rank's registered pool (transport::shm::allocate), so that
//! peers read it in place; returns the block when it goes, so a buffer cannot be freed twice or
//! forgotten. Move-only; a contiguous range (data(), size(), begin(), end()), so collectives take
//! it as they take a std::vector. The transport must outlive the buffer. With TUTTI_DEBUG_POOL=1
//! a pointer kept past the buffer's life faults when written through (pool.hpp).
#pragma once
#include <cstddef>
#include <limits>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

#include "tutti/core/log.hpp"
#include "tutti/transport/shm/transport.hpp"

namespace tutti::transport {

template <class T>
class registered_buffer {
  static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 64,
                "tutti::transport::registered_buffer holds trivially copyable elements aligned to at most 64 bytes");

 public:
  using value_type = T;

  //! `count` elements, uninitialised (as `new T[count]` leaves trivial types).
  registered_buffer(shm& transport, std::size_t count) : shm_(&transport), count_(count) {
    if (count > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    data_ = static_cast<T*>(transport.allocate(count * sizeof(T)));
  }
  registered_buffer(const registered_buffer&) = delete;
  registered_buffer& operator=(const registered_buffer&) = delete;
  registered_buffer(registered_buffer&& other) noexcept
      : shm_(other.shm_), data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  registered_buffer& operator=(registered_buffer&& other) noexcept {
    if (this != &other) {
      reset();
      shm_ = other.shm_;
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  ~registered_buffer() { reset(); }

  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] const T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] T* begin() noexcept { return data_; }
  [[nodiscard]] T* end() noexcept { return data_ + count_; }
  [[nodiscard]] const T* begin() const noexcept { return data_; }
  [[nodiscard]] const T* end() const noexcept { return data_ + count_; }
  [[nodiscard]] T& operator[](std::size_t i) noexcept { return data_[i]; }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  [[nodiscard]] std::span<T> span() noexcept { return {data_, count_}; }
  [[nodiscard]] std::span<const T> span() const noexcept { return {data_, count_}; }

 private:
  void reset() noexcept {
    if (!data_) return;
    try {
      shm_->deallocate(data_);
    } catch (const std::exception& e) {  // a destructor does not throw; say what went wrong
      log(log_level::warn, shm_->rank(), std::string("registered_buffer: ") + e.what());
    }
    data_ = nullptr;
    count_ = 0;
  }

  shm* shm_;
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace tutti::transport
