//! @file compressed.hpp  The allreduce schedule of lossy codecs: every element is quantised twice,
//! whatever the world size.
//!
//! A ring that re-encodes its running partial sum at every hop quantises an element n-1 times, so
//! its error grows with the world. Here each rank's contribution goes straight to the owner of its
//! segment (scaled, encoded once), the owner decodes and sums in fp32 with its own contribution
//! (which never leaves it, so it is not encoded), encodes the reduced segment once, and every rank
//! decodes the owners' encoded segments. This is the scheme of 1-bit Adam's compressed allreduce
//! and ZeRO++'s quantised gradients. Per element: at most n-1 independent input roundings (one per
//! contributor) + fp32 summation + one output rounding; docs/compression.md derives the bound the
//! tests check. Every rank, the owner included, ends with decode(encode(sum)): identical bits on all
//! ranks, so data-parallel replicas cannot drift apart.
//!
//! Bytes per rank: (n-1)/n of the encoded size out in each phase — the same as a ring's
//! reduce-scatter + allgather — but to n-1 peers instead of one neighbour, so n-1 messages per
//! phase and round instead of one. Algorithms differ only in the order they visit peers
//! (peer_order): ring by distance around the ring, halving_doubling by XOR partners (on powers of
//! two every step pairs ranks both ways, as its recursive halving does).
//!
//! Segments and pipelining chunks are multiples of the codec's granule (int8's 256-element block),
//! so a block's scale covers the same elements on every rank and no block straddles two messages.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "tutti/algorithm/helpers.hpp"
#include "tutti/codec/concepts.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/op.hpp"

namespace tutti::algorithm {

//! Which peer a rank talks to at step s = 1..n-1 of a phase: send to `to`, receive from `from`.
enum class peer_order {
  ring,      //!< to r+s, from r-s: every step is a shift of the ring
  xor_pairs  //!< to = from = r XOR s on powers of two (pairwise exchange both ways); ring otherwise
};

namespace compressed_detail {

struct peers {
  int to, from;
};
[[nodiscard]] inline peers at_step(peer_order order, int r, int s, int n) noexcept {
  if (order == peer_order::xor_pairs && (n & (n - 1)) == 0) return {r ^ s, r ^ s};
  return {wrap(r + s, n), wrap(r - s, n)};
}

//! `count` elements cut into n segments of `segment` elements (a multiple of the granule; the last
//! ones may be short or empty), each sent `chunk` elements (also a multiple) per round.
struct layout {
  std::size_t count, segment, chunk;
  [[nodiscard]] std::size_t rounds() const noexcept { return segment ? (segment + chunk - 1) / chunk : 0; }
  //! Round j's piece of segment i: [first, first + size).
  struct piece {
    std::size_t first, size;
  };
  [[nodiscard]] piece at(int i, std::size_t j) const noexcept {
    const std::size_t seg_first = std::min(count, static_cast<std::size_t>(i) * segment);
    const std::size_t seg_end = std::min(count, seg_first + segment);
    const std::size_t first = std::min(seg_end, seg_first + j * chunk);
    return {first, std::min(seg_end, first + chunk) - first};
  }
};

//! One request per rank, on the stack up to 64 ranks so a collective allocates nothing there.
template <class Request>
class request_slots {
 public:
  explicit request_slots(std::size_t n) {
    if (n > local_.size()) heap_.resize(n);
  }
  Request& operator[](std::size_t i) noexcept { return heap_.empty() ? local_[i] : heap_[i]; }

 private:
  std::array<Request, 64> local_{};
  std::vector<Request> heap_;
};

[[nodiscard]] constexpr std::size_t round_up(std::size_t x, std::size_t m) noexcept { return (x + m - 1) / m * m; }

//! Floats per pipelining round: TUTTI_CHUNK_BYTES of fp32, a whole number of codec granules.
template <class Ctx>
[[nodiscard]] std::size_t granule_chunk(const Ctx& c) noexcept {
  constexpr std::size_t g = Ctx::granule;
  return std::max(g, chunk_elems(c.chunk_bytes(), sizeof(float)) / g * g);
}

}  // namespace compressed_detail

//! out[i] = sum over ranks of in[i] * scale (scale: 1/n for avg, times the context's prescale),
//! in fp32 with the context's lossy codec on the wire. in == out is allowed.
template <class Ctx>
void compressed_allreduce(Ctx& c, const float* in, float* out, std::size_t count, float scale, peer_order order) {
  using namespace compressed_detail;
  const int n = c.size(), r = c.rank();
  if (count == 0) return;
  constexpr std::size_t g = Ctx::granule;
  const std::size_t per_rank = (count + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
  const std::size_t chunk = granule_chunk(c);
  const layout lay{count, round_up(per_rank, g), chunk};
  // Scratch: one wire slot per rank to send from (own slot: the encoded result), one per rank to
  // receive contributions into and one to receive results into (two, so the next round's
  // contributions can arrive while this round's results do), and the fp32 accumulator.
  const std::size_t slot = round_up(Ctx::wire_bytes(dtype::f32, std::min(chunk, lay.segment)), 64);
  const auto slots = static_cast<std::size_t>(n);
  std::byte* base = c.scratch(3 * slots * slot + std::min(chunk, lay.segment) * sizeof(float));
  auto outgoing = [&](int p) { return base + static_cast<std::size_t>(p) * slot; };
  auto contribution = [&](int p) { return base + (slots + static_cast<std::size_t>(p)) * slot; };
  auto result = [&](int p) { return base + (2 * slots + static_cast<std::size_t>(p)) * slot; };
  auto* acc = reinterpret_cast<float*>(base + 3 * slots * slot);
  // n-1 of each in flight per phase; phase 1 of round j+1 overlaps phase 2 of round j.
  request_slots<typename Ctx::request> recv1(slots), send1(slots), recv2(slots), send2(slots);
  const auto at = [](int p) { return static_cast<std::size_t>(p); };
  const auto wire = [](std::size_t elements) { return Ctx::wire_bytes(dtype::f32, elements); };
  const float self = scale * c.prescale();

  // Phase 1: contributions to their owners, encoded once; the owner sums them in fp32.
  const auto start_phase1 = [&](std::size_t j) {
    const auto mine = lay.at(r, j);
    for (int s = 1; s < n && mine.size; ++s) {
      const int from = at_step(order, r, s, n).from;
      recv1[at(from)] = c.recv(from, contribution(from), wire(mine.size));
    }
    for (int s = 1; s < n; ++s) {
      const int to = at_step(order, r, s, n).to;
      const auto theirs = lay.at(to, j);
      if (!theirs.size) continue;
      c.encode(in + theirs.first, theirs.size, self, outgoing(to));
      send1[at(to)] = c.send(to, outgoing(to), wire(theirs.size));
    }
  };
  const auto finish_phase1 = [&](std::size_t j) {
    const auto mine = lay.at(r, j);
    for (std::size_t i = 0; i < mine.size; ++i) acc[i] = in[mine.first + i] * self;
    for (int s = 1; s < n && mine.size; ++s) {
      const int from = at_step(order, r, s, n).from;
      c.wait(recv1[at(from)]);
      c.decode_add(contribution(from), mine.size, acc);
    }
    for (int s = 1; s < n; ++s) c.wait(send1[at(at_step(order, r, s, n).to)]);  // outgoing slots free
  };
  // Phase 2: each owner's reduced piece, encoded once, to every rank; all decode the same bytes.
  const auto start_phase2 = [&](std::size_t j) {
    const auto mine = lay.at(r, j);
    for (int s = 1; s < n; ++s) {
      const int from = at_step(order, r, s, n).from;
      const auto theirs = lay.at(from, j);
      if (theirs.size) recv2[at(from)] = c.recv(from, result(from), wire(theirs.size));
    }
    if (!mine.size) return;
    c.encode(acc, mine.size, 1.0f, outgoing(r));
    for (int s = 1; s < n; ++s) {
      const int to = at_step(order, r, s, n).to;
      send2[at(to)] = c.send(to, outgoing(r), wire(mine.size));
    }
  };
  const auto finish_phase2 = [&](std::size_t j) {
    const auto mine = lay.at(r, j);
    if (mine.size) c.decode(outgoing(r), mine.size, out + mine.first);
    for (int s = 1; s < n; ++s) {
      const int from = at_step(order, r, s, n).from;
      const auto theirs = lay.at(from, j);
      if (!theirs.size) continue;
      c.wait(recv2[at(from)]);
      c.decode(result(from), theirs.size, out + theirs.first);
    }
    for (int s = 1; s < n; ++s) c.wait(send2[at(at_step(order, r, s, n).to)]);  // outgoing(r) free
  };

  // Every rank posts in the same order (phase 1 of j, phase 2 of j, phase 1 of j+1, ...), so
  // messages between two ranks match in order. Round j+1's contributions are encoded and on their
  // way while round j's results travel; in place is safe because rounds touch disjoint elements.
  const std::size_t rounds = lay.rounds();
  if (rounds) start_phase1(0);
  for (std::size_t j = 0; j < rounds; ++j) {
    c.phase("REDUCE_TO_OWNER");  // contributions arrive, the owner sums in fp32
    finish_phase1(j);
    c.phase("ENCODE_RESULT");
    start_phase2(j);
    if (j + 1 < rounds) start_phase1(j + 1);
    c.phase("DECODE_RESULTS");
    finish_phase2(j);
  }
}

//! out[i] = sum over ranks of what each rank's codec sent for in[i] * scale + residual[i], for
//! codecs with error feedback (topk, onebit): every rank's encoding goes to every rank, and each adds
//! all of them in fp32 in rank order 0..n-1, so all ranks get the same bits. Each element is
//! quantised once (by its owner's encoder, whose residual keeps the rest for the next step); the
//! sum is not re-encoded, because a sum of sparse or sign vectors is neither.
template <class Ctx>
void gathered_allreduce(Ctx& c, const float* in, float* out, std::size_t count, float scale, peer_order order) {
  using namespace compressed_detail;
  const int n = c.size(), r = c.rank();
  if (count == 0) return;
  float* residual = c.residual();
  if (!residual)
    throw invalid_argument(c.where() + "codec " + std::string(Ctx::codec_type::name) +
                           " needs this tensor's error_feedback (allreduce(tensor, op, feedback))");
  const std::size_t chunk = granule_chunk(c);
  const std::size_t slot = round_up(Ctx::wire_bytes(dtype::f32, std::min(chunk, count)), 64);
  std::byte* base = c.scratch(static_cast<std::size_t>(n) * slot);
  auto wire = [&](int q) { return base + static_cast<std::size_t>(q) * slot; };
  request_slots<typename Ctx::request> recvs(static_cast<std::size_t>(n)), sends(static_cast<std::size_t>(n));
  const float self = scale * c.prescale();
  for (std::size_t first = 0; first < count; first += chunk) {
    const std::size_t m = std::min(chunk, count - first), bytes = Ctx::wire_bytes(dtype::f32, m);
    for (int s = 1; s < n; ++s) {
      const int from = at_step(order, r, s, n).from;
      recvs[static_cast<std::size_t>(from)] = c.recv(from, wire(from), bytes);
    }
    c.phase("ENCODE_GATHER");
    c.encode(in + first, m, self, residual + first, wire(r));
    for (int s = 1; s < n; ++s) {
      const int to = at_step(order, r, s, n).to;
      sends[static_cast<std::size_t>(to)] = c.send(to, wire(r), bytes);
    }
    for (int s = 1; s < n; ++s) c.wait(recvs[static_cast<std::size_t>(at_step(order, r, s, n).from)]);
    c.phase("DECODE_SUM");
    c.decode(wire(0), m, out + first);
    for (int q = 1; q < n; ++q) c.decode_add(wire(q), m, out + first);
    for (int s = 1; s < n; ++s) c.wait(sends[static_cast<std::size_t>(at_step(order, r, s, n).to)]);
  }
}

//! What an allreduce with a lossy codec accepts: float32 with sum or avg. The communicator checks
//! this before any data moves (with rank and collective named); algorithms check again so a
//! caller that reaches them another way still gets a sentence, not garbage. The context's where()
//! is built only on the way to the throw: a correct call allocates nothing.
template <class Ctx>
void check_lossy_arguments(const Ctx& c, dtype t, op o) {
  if (Ctx::codec_type::accepts(t) && (o == op::sum || o == op::avg)) return;
  throw invalid_argument(c.where() + lossy_refusal<typename Ctx::codec_type>(t, o));
}

//! The lossy allreduce entry every carrying algorithm shares: checks, then the schedule. A world
//! of one runs it too (encode and decode its own result once), so a job's numbers do not depend on
//! whether it ran alone.
template <class Ctx>
void lossy_allreduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, peer_order order) {
  check_lossy_arguments(c, t, o);
  const float scale = o == op::avg ? 1.0f / static_cast<float>(c.size()) : 1.0f;
  if constexpr (feedback_codec_policy<typename Ctx::codec_type>)
    gathered_allreduce(c, static_cast<const float*>(in), static_cast<float*>(out), count, scale, order);
  else
    compressed_allreduce(c, static_cast<const float*>(in), static_cast<float*>(out), count, scale, order);
}

}  // namespace tutti::algorithm
