//! @file native_codecs_layout.hpp  Where the lossy codecs' device schedules over NCCL put things:
//! segments, wire slots, scratch regions and the messages each rank posts. Pure functions (no CUDA
//! header), so g++ tests them; algorithm/native_codecs.cuh runs them on the GPU.
//!
//! The owner schedule (the default, algorithm/compressed.hpp's arithmetic on the device): `count`
//! elements cut into `world` segments of `segment` elements, segment = round_up(ceil(count / world),
//! granule) exactly as compressed.hpp cuts them, so int8's 256-element blocks start at the same
//! elements on every rank and on the CPU path. It runs in one round (no pipelining chunks: the GPU
//! has the memory, and fewer, larger NCCL calls are what NCCL is fast at), so each element meets
//! the same operations in the same order as on the CPU path: the owner's own contribution times
//! the scale in fp32, plus the other ranks' decoded contributions in ring order (rank r-1, r-2, ...),
//! encoded once, decoded by all.
//!
//! Device scratch, each region 256-byte aligned (so 16-bit wires take the kernels' 16-byte path):
//!   outgoing       world slots: this rank's encoded contribution to segment p in slot p
//!   contributions  world slots: what rank p sent for this rank's segment, in slot p
//!   results        world slots: owner p's encoded sum in slot p (ncclAllGather's in-place layout)
//!   accumulator    segment floats: the owner's fp32 sum
//!   tables         the multi-tensor tables of the pack/unpack launches (cuda/multi_tensor.hpp)
//! A slot is round_up(wire_bytes(segment), 256) bytes. In all: about 3 x the encoded size of the
//! tensor plus 4 bytes per element of one segment; grown once, reused by every later call.
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

#include "tutti/algorithm/compressed.hpp"
#include "tutti/cuda/chunk.hpp"

namespace tutti::algorithm::native_codecs {

inline constexpr std::size_t scratch_alignment = 256;

using compressed_detail::round_up;
//! Elements [first, first + size) of the tensor.
using piece = compressed_detail::layout::piece;

//! The owner schedule's layout for one call (see the top of this file). `wire` is the codec's
//! encoded_bytes for n float32 elements.
struct owner_layout {
  std::size_t count = 0;
  int world = 1;
  std::size_t granule = 1;
  std::size_t segment = 0;  //!< elements per segment (the last ones may be short or empty)
  std::size_t slot = 0;     //!< bytes per wire slot
  std::size_t outgoing = 0, contributions = 0, results = 0, accumulator = 0, tables = 0;  //!< byte offsets
  std::size_t table_rows = 0;  //!< rows of the multi-tensor tables, all launches together
  std::size_t total = 0;       //!< device scratch bytes

  //! Segment p: owned by rank p. compressed.hpp's cut, in one round (the chunk is the segment).
  [[nodiscard]] piece at(int p) const noexcept { return compressed_detail::layout{count, segment, segment}.at(p, 0); }
};

//! The owner schedule's layout for `count` float32 elements over `world` ranks, seen by rank `rank`
//! (the tables' size depends on which segment is this rank's). `sixteen_bit`: the codec's wire is
//! 16-bit floats, whose encode/decode go through multi-tensor tables (int8's do not).
template <class Wire>
[[nodiscard]] owner_layout make_owner_layout(std::size_t count, int world, int rank, std::size_t granule,
                                             bool sixteen_bit, Wire&& wire) {
  owner_layout l;
  l.count = count;
  l.world = world;
  l.granule = granule;
  const auto n = static_cast<std::size_t>(world);
  l.segment = round_up((count + n - 1) / n, granule);
  l.slot = round_up(wire(l.segment), scratch_alignment);
  const std::size_t slots = l.slot * n;
  l.outgoing = 0;
  l.contributions = l.outgoing + slots;
  l.results = l.contributions + slots;
  l.accumulator = l.results + slots;
  l.tables = l.accumulator + round_up(l.segment * sizeof(float), scratch_alignment);
  const std::size_t mine = l.at(rank).size;
  // The owner's own contribution times the scale into the accumulator (a float-to-float pack);
  // for 16-bit wires also: every other segment packed to its slot, the sum packed to the results,
  // every result unpacked into the output.
  l.table_rows = cuda::chunks_in(mine);
  if (sixteen_bit) {
    for (int p = 0; p < world; ++p) {
      const std::size_t size = l.at(p).size;
      if (p != rank) l.table_rows += cuda::chunks_in(size);
      l.table_rows += cuda::chunks_in(size);  // unpack of result p
    }
    l.table_rows += cuda::chunks_in(mine);  // pack of the sum
  }
  l.total = l.tables + round_up(l.table_rows * sizeof(cuda::chunk), scratch_alignment);
  return l;
}

//! One send or receive of the owner schedule's first phase: bytes at a scratch offset.
struct message {
  bool is_send = false;
  int peer = -1;
  std::size_t offset = 0;  //!< in device scratch
  std::size_t bytes = 0;
};

//! Phase 1 of rank `rank`: to every other rank p, the encoding of segment p (from slot p of
//! outgoing); from every other rank p, its encoding of this rank's segment (into slot p of
//! contributions). Empty segments move nothing. Per peer p = r+1, r+2, ...: [receive from p, send to
//! p], the mirrored pairs native's alltoall posts, in one group at any world size. Sizes match
//! pairwise: rank a's send to b and b's receive from a are both wire(segment b); a peer with an
//! empty segment is sent nothing.
template <class Wire>
[[nodiscard]] std::vector<message> phase1_messages(const owner_layout& l, int rank, Wire&& wire) {
  std::vector<message> m;
  const int n = l.world;
  m.reserve(2 * static_cast<std::size_t>(n));
  const std::size_t mine = l.at(rank).size;
  for (int k = 1; k < n; ++k) {
    const int p = (rank + k) % n;
    if (mine) m.push_back({false, p, l.contributions + static_cast<std::size_t>(p) * l.slot, wire(mine)});
    if (const std::size_t theirs = l.at(p).size)
      m.push_back({true, p, l.outgoing + static_cast<std::size_t>(p) * l.slot, wire(theirs)});
  }
  return m;
}

//! The order in which the owner adds the other ranks' contributions to its own: r-1, r-2, ...,
//! as compressed.hpp's ring schedule does, so the fp32 sums are the CPU path's bit for bit.
[[nodiscard]] inline int contributor(int rank, int step, int world) noexcept { return (rank - step + world) % world; }

//! The 16-bit NCCL sum (algorithm::native_wire_sum): the packed tensor, then the tables of one
//! pack and one unpack launch.
struct wire_sum_layout {
  std::size_t buffer = 0, tables = 0, table_rows = 0, total = 0;
};

[[nodiscard]] inline wire_sum_layout make_wire_sum_layout(std::size_t count) noexcept {
  wire_sum_layout l;
  l.buffer = 0;
  l.tables = round_up(count * 2, scratch_alignment);
  l.table_rows = 2 * cuda::chunks_in(count);
  l.total = l.tables + round_up(l.table_rows * sizeof(cuda::chunk), scratch_alignment);
  return l;
}

}  // namespace tutti::algorithm::native_codecs
