//! @file recursive_doubling.hpp  The message pattern of algorithm::eager: recursive doubling with
//! every rank's descriptor carried along, and what each collective's frames hold.
//!
//! With p2 the largest power of two <= n, rank r < p2 is a core rank; rank p2 + i (an extra) first
//! sends its frame to core rank i and at the end receives the finished frame from it. Core ranks
//! pair with r xor 2^k in round k. A frame is the descriptors of the ranks its sender covers (the
//! core ranks of its aligned block of 2^k, with their extras), then the payload's data; both sides
//! compute the same list, so nothing in a frame says whose descriptors it holds.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/op.hpp"

namespace tutti::algorithm {

//! One exchange of the pattern: what this rank sends `partner` (the ranks it covers: `mine`, empty
//! when it only receives) and receives (`theirs`, empty when it only sends). `partner_low`: the
//! partner's ranks come first in the reduction order; `replaces`: the frame is the finished result;
//! `distance`: a core round's 2^k (0 for an extra's exchanges).
struct rd_step {
  int partner = -1;
  std::vector<int> mine, theirs;
  bool partner_low = false;
  bool replaces = false;
  int distance = 0;
};

//! p2 on n ranks: the largest power of two <= n (the core ranks; the rest are extras).
[[nodiscard]] constexpr int rd_core_ranks(int n) noexcept {
  int p2 = 1;
  while (p2 <= n / 2) p2 *= 2;
  return p2;
}

//! This rank's steps, in order (the same pattern whatever the call: only n decides it).
struct rd_plan {
  std::vector<rd_step> steps;

  rd_plan() = default;
  rd_plan(int r, int n) {
    const int p2 = rd_core_ranks(n);
    const int extras = n - p2;
    std::vector<int> all(static_cast<std::size_t>(n));
    for (int q = 0; q < n; ++q) all[static_cast<std::size_t>(q)] = q;
    if (r >= p2) {  // an extra: its own frame to its core rank, the finished one back
      steps.push_back({r - p2, {r}, {}, false, false});
      steps.push_back({r - p2, {}, all, false, true});
      return;
    }
    if (r < extras) steps.push_back({r + p2, {}, {r + p2}, false, false});
    for (int k = 1; k < p2; k *= 2) {
      const int partner = r ^ k;
      steps.push_back({partner, covered(r, k, p2, extras), covered(partner, k, p2, extras), partner < r, false, k});
    }
    if (r < extras) steps.push_back({r + p2, all, {}, false, false});
  }

 private:
  //! The ranks core rank `core` has heard from before the round of distance `k`: the core ranks
  //! of its aligned block of k, then their extras.
  static std::vector<int> covered(int core, int k, int p2, int extras) {
    std::vector<int> v;
    const int base = core & ~(k - 1);
    for (int q = base; q < base + k; ++q) v.push_back(q);
    for (int q = base; q < base + k && q < extras; ++q) v.push_back(q + p2);
    return v;
  }
};

//! The largest frame on n ranks whose data part holds up to `data_capacity` bytes.
[[nodiscard]] constexpr std::size_t rd_frame_bytes(std::size_t n, std::size_t data_capacity) noexcept {
  return n * sizeof(collective_descriptor) + data_capacity;
}

//! What the frames carry besides descriptors. pack(step, dst) writes the data for the step's frame
//! (covering step.mine) and returns its size; unpack(step, src, bytes) takes a received frame's data and returns
//! false when it is not the size this rank's call expects (then nothing is taken).
namespace rd_payload {

//! The check alone, and the barrier.
struct none {
  static std::size_t pack(const rd_step&, std::byte*) noexcept { return 0; }
  static bool unpack(const rd_step&, const std::byte*, std::size_t bytes) noexcept { return bytes == 0; }
};

//! allreduce and reduce: `acc` holds the partial result over the ranks covered so far.
struct reduction {
  using reduce_fn = void (*)(dtype, op, void*, const void*, const void*, std::size_t);
  dtype type;
  op operation;
  std::size_t count;
  std::byte* acc;
  reduce_fn reduce;

  [[nodiscard]] std::size_t bytes() const noexcept { return count * size_of(type); }
  std::size_t pack(const rd_step&, std::byte* dst) const {
    if (bytes()) std::memcpy(dst, acc, bytes());
    return bytes();
  }
  bool unpack(const rd_step& step, const std::byte* src, std::size_t got) const {
    if (got != bytes()) return false;
    if (step.replaces) std::memcpy(acc, src, got);
    else if (step.partner_low) reduce(type, operation, acc, src, acc, count);  // theirs (op) mine
    else reduce(type, operation, acc, acc, src, count);
    return true;
  }
};

//! broadcast: the root's data travels in every frame whose sender covers the root. `data` is the
//! root's buffer on the root; elsewhere `acc` receives it.
struct from_root {
  int root;
  const void* data;
  std::size_t bytes;
  std::byte* acc;

  [[nodiscard]] bool in(const std::vector<int>& ranks) const { return std::find(ranks.begin(), ranks.end(), root) != ranks.end(); }
  std::size_t pack(const rd_step& step, std::byte* dst) const {
    if (!in(step.mine)) return 0;
    if (bytes) std::memcpy(dst, data ? data : acc, bytes);
    return bytes;
  }
  bool unpack(const rd_step& step, const std::byte* src, std::size_t got) const {
    const bool carries = in(step.theirs);
    if (got != (carries ? bytes : 0)) return false;
    if (carries && acc && got) std::memcpy(acc, src, got);
    return true;
  }
};

//! allgather: `acc` holds rank q's block of `block` bytes at q * block, for the ranks covered so far.
struct blocks {
  std::size_t block;
  std::byte* acc;

  std::size_t pack(const rd_step& step, std::byte* dst) const {
    const std::vector<int>& ranks = step.mine;
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (block) std::memcpy(dst + i * block, acc + static_cast<std::size_t>(ranks[i]) * block, block);
    return ranks.size() * block;
  }
  bool unpack(const rd_step& step, const std::byte* src, std::size_t got) const {
    if (got != step.theirs.size() * block) return false;
    for (std::size_t i = 0; i < step.theirs.size(); ++i)
      if (block) std::memcpy(acc + static_cast<std::size_t>(step.theirs[i]) * block, src + i * block, block);
    return true;
  }
};

//! reduce_scatter by recursive halving in the same rounds: `acc` holds n blocks of `count` elements,
//! this rank's working copy of its input. The round of distance k hands the partner the blocks its
//! side finishes (ranks whose index mod p2 agrees with the partner's below bit 2k) and reduces the
//! partner's copy of this side's blocks into its own, so after the rounds core rank r's block r is
//! the result (and block p2 + r its extra's, sent to it last); an extra hands its whole input to
//! its core rank first. Each block's partial sums combine lower ranks first, as `reduction` does.
struct halving {
  using reduce_fn = void (*)(dtype, op, void*, const void*, const void*, std::size_t);
  dtype type;
  op operation;
  std::size_t count;  //!< elements per block
  std::byte* acc;
  int n, p2, self;
  reduce_fn reduce;

  [[nodiscard]] std::size_t block() const noexcept { return count * size_of(type); }
  //! Calls f(q) for each block the round of distance k moves to `side`'s half, in rank order.
  template <class F>
  void each(int side, int k, F&& f) const {
    const int mask = 2 * k - 1;
    for (int q = 0; q < n; ++q)
      if (((q % p2) & mask) == (side & mask)) f(static_cast<std::size_t>(q));
  }
  std::size_t pack(const rd_step& step, std::byte* dst) const {
    const std::size_t b = block();
    if (step.distance == 0) {  // an extra's whole input to its core rank, or the extra's finished block back
      const std::size_t bytes = self >= p2 ? static_cast<std::size_t>(n) * b : b;
      if (bytes) std::memcpy(dst, self >= p2 ? acc : acc + static_cast<std::size_t>(step.partner) * b, bytes);
      return bytes;
    }
    std::size_t at = 0;
    each(step.partner, step.distance, [&](std::size_t q) {
      if (b) std::memcpy(dst + at, acc + q * b, b);
      at += b;
    });
    return at;
  }
  bool unpack(const rd_step& step, const std::byte* src, std::size_t got) const {
    const std::size_t b = block();
    if (step.distance == 0) {
      if (self >= p2) {  // an extra: its finished block
        if (got != b) return false;
        if (b) std::memcpy(acc + static_cast<std::size_t>(self) * b, src, b);
      } else {  // a core rank: its extra's whole input (a higher rank: after its own)
        if (got != static_cast<std::size_t>(n) * b) return false;
        reduce(type, operation, acc, acc, src, static_cast<std::size_t>(n) * count);
      }
      return true;
    }
    std::size_t expected = 0;
    each(self, step.distance, [&](std::size_t) { expected += b; });
    if (got != expected) return false;
    std::size_t at = 0;
    each(self, step.distance, [&](std::size_t q) {
      std::byte* mine = acc + q * b;
      if (step.partner_low) reduce(type, operation, mine, src + at, mine, count);
      else reduce(type, operation, mine, mine, src + at, count);
      at += b;
    });
    return true;
  }
};

}  // namespace rd_payload

//! Writes a frame for the step's `mine` into dst: their descriptors, then the payload's data. Returns its size.
template <class Payload>
std::size_t rd_pack(const std::vector<collective_descriptor>& calls, const rd_step& step, const Payload& payload,
                    std::byte* dst) {
  constexpr std::size_t d = sizeof(collective_descriptor);
  const std::vector<int>& ranks = step.mine;
  for (std::size_t i = 0; i < ranks.size(); ++i) std::memcpy(dst + i * d, &calls[static_cast<std::size_t>(ranks[i])], d);
  return ranks.size() * d + payload.pack(step, dst + ranks.size() * d);
}

//! Takes a received frame of `arrived` bytes for `step`: the partner's descriptors into `calls`,
//! its data into the payload. Returns false when the data was not the size expected.
template <class Payload>
bool rd_unpack(std::vector<collective_descriptor>& calls, const rd_step& step, const Payload& payload,
               const std::byte* src, std::size_t arrived) {
  constexpr std::size_t d = sizeof(collective_descriptor);
  const std::size_t head = step.theirs.size() * d;
  if (arrived < head) return false;
  for (std::size_t i = 0; i < step.theirs.size(); ++i) std::memcpy(&calls[static_cast<std::size_t>(step.theirs[i])], src + i * d, d);
  return payload.unpack(step, src + head, arrived - head);
}

}  // namespace tutti::algorithm
