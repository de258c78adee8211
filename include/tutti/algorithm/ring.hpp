//! @file ring.hpp  algorithm::ring — bandwidth-optimal ring collectives, pipelined in chunks.
//!
//! allreduce = reduce-scatter + allgather around the ring (2(n-1)/n of the data per rank, the
//! minimum). The buffer is cut into one segment per rank; segments are moved `chunk_bytes` at a
//! time and each chunk index is a complete round (reduce-scatter then allgather) so the chunk is
//! still in cache when it comes back, and scratch stays a few chunks however large the message.
#pragma once
#include <array>
#include <cstddef>
#include <cstring>
#include <string_view>

#include "tutti/algorithm/alltoall.hpp"
#include "tutti/algorithm/compressed.hpp"
#include "tutti/algorithm/context.hpp"
#include "tutti/algorithm/helpers.hpp"
#include "tutti/algorithm/split.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/listed.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/core/reduce.hpp"
#include "tutti/tuner/ring.hpp"

namespace tutti::algorithm {

struct ring {
  using tutti_role = role::algorithm;
  static constexpr std::string_view name = "ring";
  //! allreduce carries lossy codecs (algorithm/compressed.hpp, peers visited in ring order).
  static constexpr bool carries_lossy_codecs = true;

  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    if constexpr (!Ctx::lossless) return lossy_allreduce(c, in, out, count, t, o, peer_order::ring);
    const int n = c.size();
    const std::size_t esz = size_of(t);
    if (n == 1 || count == 0) return copy_if_distinct(out, in, count * esz);
    const split sp{count, static_cast<std::size_t>(n)};
    const std::size_t chunk = chunk_elems(c.chunk_bytes(), esz);
    std::byte* incoming = c.scratch(chunk * esz);
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    for (std::size_t j = 0, rounds = sp.rounds(chunk); j < rounds; ++j) {
      c.phase("REDUCE_SCATTER");
      reduce_scatter_round(c, sp, j, chunk, t, o, src, incoming, [&](int seg, std::size_t first, int) {
        (void)seg;
        return dst + first * esz;  // partial and final sums both land in the output buffer
      });
      if (o == op::avg) {
        const auto own = sp.chunk(static_cast<std::size_t>(c.rank()), j, chunk);
        finish_avg(t, dst + own.first * esz, own.count, n);
      }
      c.phase("ALLGATHER");
      allgather_round(c, sp, j, chunk, esz, dst);
    }
  }

  //! in: count * n elements; out: this rank's `count` reduced elements (in place when
  //! out == in + rank * count).
  template <class Ctx>
  static void reduce_scatter(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    const int n = c.size();
    const std::size_t esz = size_of(t);
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    if (n == 1 || count == 0) return copy_if_distinct(out, in, count * esz);
    const split sp{count * static_cast<std::size_t>(n), static_cast<std::size_t>(n)};
    const std::size_t chunk = chunk_elems(c.chunk_bytes(), esz);
    // Partial sums travel on and are never needed here again: two chunk slots alternate, so the
    // slot being sent is not overwritten by the next step's reduction.
    std::byte* incoming = c.scratch(3 * chunk * esz);
    std::array<std::byte*, 2> partial = {incoming + chunk * esz, incoming + 2 * chunk * esz};
    const std::size_t own_first = sp.offset(static_cast<std::size_t>(c.rank()));
    for (std::size_t j = 0, rounds = sp.rounds(chunk); j < rounds; ++j) {
      reduce_scatter_round(c, sp, j, chunk, t, o, src, incoming, [&](int, std::size_t first, int step) {
        return step == n - 2 ? dst + (first - own_first) * esz : partial[static_cast<std::size_t>(step) & 1];
      });
      if (o == op::avg) {
        const auto own = sp.chunk(static_cast<std::size_t>(c.rank()), j, chunk);
        finish_avg(t, dst + (own.first - own_first) * esz, own.count, n);
      }
    }
  }

  //! in: count elements; out: count * n elements, rank i's at out + i * count (in place when
  //! in == out + rank * count).
  template <class Ctx>
  static void allgather(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    const int n = c.size();
    const std::size_t esz = size_of(t);
    auto* dst = static_cast<std::byte*>(out);
    copy_if_distinct(dst + static_cast<std::size_t>(c.rank()) * count * esz, in, count * esz);
    if (n == 1 || count == 0) return;
    const split sp{count * static_cast<std::size_t>(n), static_cast<std::size_t>(n)};
    const std::size_t chunk = chunk_elems(c.chunk_bytes(), esz);
    if (const std::size_t rounds = sp.rounds(chunk); rounds == 1) allgather_round(c, sp, 0, chunk, esz, dst);
    else allgather_streamed(c, sp, rounds, chunk, esz, dst);
  }

  //! A chain from root around the ring, chunk by chunk, so every link is busy at once.
  template <class Ctx>
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t count, dtype t, int root) {
    const int n = c.size();
    const std::size_t bytes = count * size_of(t);
    const int pos = (c.rank() - root + n) % n;  // distance from root along the ring
    const int prev = (c.rank() - 1 + n) % n;
    const int next = (c.rank() + 1) % n;
    const bool forwards = pos < n - 1;
    auto* dst = static_cast<std::byte*>(out);
    const auto* src = pos == 0 ? static_cast<const std::byte*>(in) : dst;
    const std::size_t chunk = c.chunk_bytes();
    constexpr std::size_t window = tuner::ring_tuning::broadcast_window;  // sends in flight before the oldest is taken
    std::array<typename Ctx::request, window> sends{};
    std::size_t k = 0;
    for (std::size_t first = 0; first < bytes && n > 1; first += chunk, ++k) {
      const std::size_t len = std::min(chunk, bytes - first);
      if (pos > 0) {
        auto r = c.recv(prev, dst + first, len);
        c.wait(r);
      }
      if (forwards) {
        c.wait(sends[k % window]);
        sends[k % window] = c.send(next, src + first, len);
      }
    }
    for (auto& s : sends) c.wait(s);
    if (pos == 0) copy_if_distinct(out, in, bytes);
  }

  //! A pipelined chain ending at root: the rank farthest from root (root+1, going backwards) sends
  //! its input; each rank on the way adds its own and passes the partial result on, chunk by chunk.
  //! Root gets in[root] op (in[root+1] op (... op in[root-1])), the same order on every call.
  template <class Ctx>
  static void reduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, int root) {
    const int n = c.size();
    const std::size_t esz = size_of(t);
    if (n == 1) return copy_if_distinct(out, in, count * esz);
    if (count == 0) return;
    const int pos = wrap(c.rank() - root, n);  // 0 at root; n-1 starts the chain
    const int from = wrap(c.rank() + 1, n), to = wrap(c.rank() - 1, n);
    const std::size_t chunk = chunk_elems(c.chunk_bytes(), esz);
    constexpr std::size_t window = tuner::ring_tuning::reduce_window;  // partial sums in flight
    std::byte* incoming = c.scratch((window + 1) * chunk * esz);
    std::byte* partial = incoming + chunk * esz;
    std::array<typename Ctx::request, window> sends{};
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    std::size_t k = 0;
    for (std::size_t first = 0; first < count; first += chunk, ++k) {
      const std::size_t len = std::min(chunk, count - first);
      const std::byte* mine = src + first * esz;
      const std::byte* result = mine;  // the chain's last rank passes its input on as it is
      if (pos < n - 1) {
        auto rq = c.recv(from, incoming, len * esz);
        c.wait(rq);
        c.wait(sends[k % window]);  // the slot we reduce into is free again (waiting twice is free)
        std::byte* target = pos == 0 ? dst + first * esz : partial + (k % window) * chunk * esz;
        tutti::reduce(t, o, target, mine, incoming, len);
        if (pos == 0 && o == op::avg) finish_avg(t, target, len, n);
        result = target;
      }
      if (pos > 0) {
        // The chain's last rank reduces nothing, so only here is the slot's earlier send waited
        // for: without it, that rank left one request per chunk outstanding and failed past the
        // transport's 1024 (a 512 MiB reduce at the default chunk; found by 8 KiB chunks in the suite).
        c.wait(sends[k % window]);
        sends[k % window] = c.send(to, result, len * esz);
      }
    }
    for (auto& s : sends) c.wait(s);
  }

  //! No ring structure helps an alltoall: the pairwise exchange every algorithm shares.
  template <class Ctx>
  static void alltoall(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    pairwise_alltoall(c, in, out, count, t);
  }

  //! A one-byte ring allgather: after n-1 steps every rank has heard (transitively) from all.
  template <class Ctx>
  static void barrier(Ctx& c) {
    const int n = c.size();
    std::byte* token = c.scratch(2);
    token[0] = std::byte{1};
    for (int s = 0; s < n - 1; ++s) {
      auto r = c.recv((c.rank() - 1 + n) % n, token + 1, 1);
      auto q = c.send((c.rank() + 1) % n, token, 1);
      c.wait(r);
      c.wait(q);
    }
  }

  //! Round j of allgather: at step s rank r forwards segment r-s and receives segment r-s-1 in place.
  //! Public for hierarchical's pipelined allgather, which drives the rounds one at a time.
  template <class Ctx>
  static void allgather_round(Ctx& c, const split& sp, std::size_t j, std::size_t chunk, std::size_t esz,
                              std::byte* buf) {
    const int n = c.size(), r = c.rank();
    for (int s = 0; s < n - 1; ++s) {
      const auto out = sp.chunk(static_cast<std::size_t>(wrap(r - s, n)), j, chunk);
      const auto inc = sp.chunk(static_cast<std::size_t>(wrap(r - s - 1, n)), j, chunk);
      typename Ctx::request rq{}, sq{};
      if (inc.count) rq = c.recv(wrap(r - 1, n), buf + inc.first * esz, inc.count * esz);
      if (out.count) sq = c.send(wrap(r + 1, n), buf + out.first * esz, out.count * esz);
      c.wait(rq);
      c.wait(sq);
    }
  }

 private:
  //! allgather over several chunks as one stream: item i = (chunk j, step s), i = j(n-1) + s, moves
  //! block r-s's chunk j on and receives block r-s-1's. Only a forward waits for data (step s's
  //! send of chunk j needs step s-1's receive of it); receives are posted `window` - 1 items ahead
  //! and up to `window` sends are in flight, so the link never idles between chunks. (In rounds,
  //! every step of every chunk waited for its send and receive: at 10 Gbit/s between two namespace
  //! hosts, 0.66-0.94x Open MPI's time at 1-256 MiB.)
  template <class Ctx>
  static void allgather_streamed(Ctx& c, const split& sp, std::size_t rounds, std::size_t chunk, std::size_t esz,
                                 std::byte* buf) {
    const int n = c.size(), r = c.rank();
    const auto steps = static_cast<std::size_t>(n - 1), items = rounds * steps;
    constexpr std::size_t window = tuner::ring_tuning::allgather_window;
    std::array<typename Ctx::request, window> recvs{}, sends{};
    const auto block = [&](std::size_t i, int back) {
      return sp.chunk(static_cast<std::size_t>(wrap(r - static_cast<int>(i % steps) - back, n)), i / steps, chunk);
    };
    std::size_t posted = 0;  // receives posted: items [0, posted)
    for (std::size_t i = 0; i < items; ++i) {
      for (; posted < std::min(items, i + window - 1); ++posted) {
        auto& slot = recvs[posted % window];
        c.wait(slot);  // item posted - window's, long done: a forward waited for it, or it was last
        const auto inc = block(posted, 1);
        slot = inc.count ? c.recv(wrap(r - 1, n), buf + inc.first * esz, inc.count * esz) : typename Ctx::request{};
      }
      if (i % steps != 0) c.wait(recvs[(i - 1) % window]);  // the chunk this step forwards
      const auto out = block(i, 0);
      auto& slot = sends[i % window];
      c.wait(slot);
      slot = out.count ? c.send(wrap(r + 1, n), buf + out.first * esz, out.count * esz) : typename Ctx::request{};
    }
    for (auto& q : recvs) c.wait(q);
    for (auto& q : sends) c.wait(q);
  }

  //! Round j of reduce-scatter: n-1 steps; at step s rank r sends segment r-s-1 and receives and
  //! reduces segment r-s-2, so after the last step it holds segment r fully reduced.
  //! `target(seg, first, step)` says where the reduced chunk goes; the next step sends it from there.
  template <class Ctx, class Target>
  static void reduce_scatter_round(Ctx& c, const split& sp, std::size_t j, std::size_t chunk, dtype t, op o,
                                   const std::byte* in, std::byte* incoming, Target target) {
    const int n = c.size(), r = c.rank();
    const std::size_t esz = size_of(t);
    const std::byte* send_from = nullptr;
    for (int s = 0; s < n - 1; ++s) {
      const int send_seg = wrap(r - s - 1, n), recv_seg = wrap(r - s - 2, n);
      const auto out = sp.chunk(static_cast<std::size_t>(send_seg), j, chunk);
      const auto inc = sp.chunk(static_cast<std::size_t>(recv_seg), j, chunk);
      if (s == 0) send_from = in + out.first * esz;
      typename Ctx::request rq{}, sq{};
      // Zero-length chunks are skipped on both sides: sender and receiver compute the same length.
      if (inc.count) rq = c.recv(wrap(r - 1, n), incoming, inc.count * esz);
      if (out.count) sq = c.send(wrap(r + 1, n), send_from, out.count * esz);
      c.wait(rq);
      std::byte* reduced = target(recv_seg, inc.first, s);
      c.reduce(t, o, reduced, in + inc.first * esz, incoming, inc.count);
      c.wait(sq);
      send_from = reduced;
    }
  }
};

}  // namespace tutti::algorithm

// Named in the communicator's refusals where it has the collective (core/listed.hpp).
TUTTI_LIST_ALGORITHM_AT(1, "", tutti::algorithm::ring);
