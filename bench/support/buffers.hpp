//! @file buffers.hpp  The benchmark's send and receive buffers: page-aligned heap memory, or memory
//! registered with the transport (-R 1) that one-sided algorithms read in place.
//!
//! Neither kind comes from operator new, so neither counts as a hot-path allocation, and both are
//! written once when made (first touch by the rank that uses them, so no page faults are timed).
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <utility>

namespace bench {

class buffer {
 public:
  buffer() = default;
  buffer(buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), owner_(other.owner_), release_(other.release_) {}
  buffer& operator=(buffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      owner_ = other.owner_;
      release_ = other.release_;
    }
    return *this;
  }
  ~buffer() { reset(); }

  //! `bytes` (at least one page) of page-aligned heap memory, every byte set to `fill`.
  [[nodiscard]] static buffer heap(std::size_t bytes, int fill) {
    constexpr std::size_t page = 4096;
    const std::size_t rounded = (bytes + page - 1) / page * page + page;  // never 0
    auto* p = static_cast<std::byte*>(std::aligned_alloc(page, rounded));
    if (!p) throw std::bad_alloc();
    std::memset(p, fill, rounded);
    return buffer(p, nullptr, [](void*, std::byte* q) noexcept { std::free(q); });
  }

  //! `bytes` of the transport's registered memory (`t.allocate`, returned by `t.deallocate`),
  //! every byte set to `fill`. The transport must outlive the buffer.
  template <class Transport>
  [[nodiscard]] static buffer registered(Transport& t, std::size_t bytes, int fill) {
    auto* p = static_cast<std::byte*>(t.allocate(bytes ? bytes : 1));
    std::memset(p, fill, bytes ? bytes : 1);
    return buffer(p, &t, [](void* owner, std::byte* q) noexcept {
      try {
        static_cast<Transport*>(owner)->deallocate(q);
      } catch (...) {
        std::terminate();  // only a pointer the transport did not hand out throws: a bug here
      }
    });
  }

  [[nodiscard]] std::byte* get() const noexcept { return data_; }

 private:
  using release_fn = void (*)(void* owner, std::byte* p) noexcept;
  buffer(std::byte* p, void* owner, release_fn release) noexcept : data_(p), owner_(owner), release_(release) {}
  void reset() noexcept {
    if (data_) release_(owner_, std::exchange(data_, nullptr));
  }

  std::byte* data_ = nullptr;
  void* owner_ = nullptr;
  release_fn release_ = nullptr;
};

}  // namespace bench
