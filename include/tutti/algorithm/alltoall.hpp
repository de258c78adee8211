//! @file alltoall.hpp  Pairwise-exchange alltoall over any two-sided transport, shared by algorithms.
//!
//! Step s (1 <= s < n): send block (r+s) % n to rank r+s, receive block (r-s) % n from rank r-s.
//! Every rank talks to one sender and one receiver per step, so no link is oversubscribed; a
//! window of steps is in flight at once to hide latency. Cost: (n-1) alpha + (n-1)/n * bytes * beta
//! per rank — optimal in bytes; Bruck's log2(n)-step variant only pays off for tiny blocks at
//! large n.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>

#include "tutti/core/dtype.hpp"
#include "tutti/tuner/alltoall.hpp"

namespace tutti::algorithm {

//! in and out hold n blocks of `count` elements; in place (in == out) stages the input in scratch.
template <class Ctx>
void pairwise_alltoall(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
  const int n = c.size(), r = c.rank();
  const std::size_t block = count * size_of(t);
  const auto* src = static_cast<const std::byte*>(in);
  auto* dst = static_cast<std::byte*>(out);
  if (block == 0) return;
  if (in == out && n > 1) {  // received blocks would overwrite blocks not yet sent
    std::byte* copy = c.scratch(static_cast<std::size_t>(n) * block);
    std::memcpy(copy, src, static_cast<std::size_t>(n) * block);
    src = copy;
  }
  const auto at = [block](auto* base, int q) { return base + static_cast<std::size_t>(q) * block; };
  if (src != dst) std::memcpy(at(dst, r), at(src, r), block);
  constexpr int window = tuner::alltoall_tuning::window;  // steps in flight
  std::array<typename Ctx::request, 2 * window> pending{};
  for (int first = 1; first < n; first += window) {
    const int last = std::min(n, first + window);
    for (int s = first; s < last; ++s) {
      const int to = (r + s) % n, from = (r - s + n) % n;
      const auto k = static_cast<std::size_t>(2 * (s - first));
      pending[k] = c.recv(from, at(dst, from), block);
      pending[k + 1] = c.send(to, at(src, to), block);
    }
    for (auto& p : pending) c.wait(p);
  }
}

}  // namespace tutti::algorithm
