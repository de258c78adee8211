//! @file heap_allocations.hpp  Counts heap allocations per thread, to show that timed loops allocate nothing.
//!
//! Replacing the global operator new is the only way to see allocations made inside the library.
//! The array, nothrow and array-delete forms of libstdc++ forward to these. Per thread, because
//! inproc ranks (and tutti-cuda-native-bench's GPUs) are threads; under a launcher the one rank is
//! the main thread. Defines the replacements: include it from exactly one translation unit of a
//! program (each bench program is one).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {
thread_local std::uint64_t heap_allocations = 0;  // trivially initialised: safe inside operator new
}  // namespace

void* operator new(std::size_t bytes) {
  ++heap_allocations;
  if (void* p = std::malloc(bytes ? bytes : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t bytes, std::align_val_t align) {
  ++heap_allocations;
  const auto a = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(a, (bytes + a - 1) / a * a + (bytes ? 0 : a))) return p;
  throw std::bad_alloc();
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
// g++ sees free() inlined into code that got the pointer from operator new; both are ours.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
