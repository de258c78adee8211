//! @file direct.hpp  algorithm::direct — intra-node collectives that read peers' memory directly.
//!
//! Needs a one-sided transport (transport::shm): every rank maps every other rank's staging
//! buffers, so data moves once into shared memory (or not at all, from registered buffers) and is
//! reduced straight out of it, with no messages — ranks synchronise by publishing rising epoch
//! numbers that peers poll.
//!
//! allreduce: small messages are one-shot (every rank reduces the whole buffer from all peers: one
//! synchronisation); larger ones are two-shot (rank r reduces segment r from all peers into its
//! stage, then everyone copies every segment out: two synchronisations, each rank reads its share
//! once). Messages larger than a staging buffer go chunk by chunk, each chunk an epoch; the two
//! staging buffers alternate between epochs, so a buffer is rewritten only after every peer has
//! entered the next epoch and is therefore done reading it.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string_view>

#include "tutti/algorithm/alltoall.hpp"
#include "tutti/algorithm/compressed.hpp"
#include "tutti/algorithm/context.hpp"
#include "tutti/algorithm/helpers.hpp"
#include "tutti/algorithm/split.hpp"
#include "tutti/core/collective.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/listed.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/core/reduce.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/tuner/direct.hpp"

namespace tutti::algorithm {

struct direct {
  using tutti_role = role::algorithm;
  static constexpr std::string_view name = "direct";
  //! Reads peers' memory: runs only on a one-sided transport (or group view).
  static constexpr bool needs_one_sided = true;
  //! allreduce carries lossy codecs with the two-sided schedule of algorithm/compressed.hpp: on
  //! shared memory compression saves no link bandwidth, but a communicator's results must not
  //! depend on which algorithm ran (the same quantisation on every algorithm).
  static constexpr bool carries_lossy_codecs = true;
  //! Ranks' descriptors travel with the first epoch's signal: no separate checking round.
  template <class Transport>
  static constexpr bool checks_arguments = true;

  //! Only the argument check (one epoch), for a rank that refused its own arguments or has no data.
  template <class Ctx>
  static void agree(Ctx& c) {
    auto& tr = one_sided(c);
    if (c.size() > 1) announce(c, tr, tr.next_epoch(), 0, true);
  }

  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    if constexpr (!Ctx::lossless) {
      // Encoded bytes cannot be reduced where they lie, so a lossy codec takes the two-sided
      // schedule over the same transport, after the one epoch that checks the ranks' arguments.
      if (c.size() > 1) agree(c);
      return lossy_allreduce(c, in, out, count, t, o, peer_order::ring);
    }
    auto& tr = one_sided(c);
    const int n = c.size(), r = c.rank();
    const std::size_t esz = size_of(t), bytes = count * esz;
    if (n == 1) return copy_if_distinct(out, in, bytes);
    if (count == 0) return agree(c);
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    const std::size_t chunk = std::max<std::size_t>(1, tr.stage_bytes() / esz);
    if (bytes <= c.template tuning<tuner::direct_tuning>().one_shot_bytes && bytes <= tr.stage_bytes()) {
      // Every rank folds all inputs in rank order 0..n-1, so all ranks get identical bits.
      c.phase("ONE_SHOT");
      const auto e = tr.next_epoch();
      std::byte* stage = tr.stage(r, parity(e));
      std::memcpy(stage, src, bytes);  // staged even when registered: out may alias in
      announce(c, tr, e, offset_in(tr, r, stage), true);
      const std::byte* a = peer_data(c, tr, 0, e);
      const std::byte* b = peer_data(c, tr, 1, e);
      tutti::reduce(t, o, dst, a, b, count);
      for (int q = 2; q < n; ++q) tutti::reduce(t, o, dst, dst, peer_data(c, tr, q, e), count);
      if (o == op::avg) finish_avg(t, dst, count, n);
      return;
    }
    // Two-shot, chunk by chunk. Registered memory (from the transport's allocate()) is used where
    // it is: a registered input is read by peers in place (no copy-in), and a registered output
    // receives this rank's reduced segment directly and is read by peers from there.
    using T = std::remove_cvref_t<decltype(tr)>;
    const std::size_t registered_in = tr.registered_offset(in, bytes);
    const std::size_t registered_out = tr.registered_offset(out, bytes);
    std::uint64_t e = 0;
    for (std::size_t first = 0; first < count; first += chunk) {
      const std::size_t len = std::min(chunk, count - first);
      const split sp{len, static_cast<std::size_t>(n)};
      c.phase("REDUCE_SCATTER");
      e = tr.next_epoch();
      std::byte* stage = tr.stage(r, parity(e));
      std::size_t mine;
      if (registered_in == T::not_registered) {
        std::memcpy(stage, src + first * esz, len * esz);
        mine = offset_in(tr, r, stage);
      } else {
        mine = registered_in + first * esz;
      }
      announce(c, tr, e, mine, first == 0);
      // reduce-scatter: segment r from every rank, starting with our own (only the owner computes
      // a segment, so every rank sees the owner's order)
      const std::size_t seg = sp.offset(static_cast<std::size_t>(r)) * esz, seg_len = sp.length(static_cast<std::size_t>(r));
      std::byte* reduced = registered_out == T::not_registered ? stage + seg : dst + first * esz + seg;
      const std::byte* own = tr.segment_base(r) + mine + seg;
      for (int k = 1; k < n; ++k) {
        const int q = (r + k) % n;
        tutti::reduce(t, o, reduced, k == 1 ? own : reduced, peer_data(c, tr, q, e) + seg, seg_len);
      }
      if (o == op::avg) finish_avg(t, reduced, seg_len, n);
      tr.signal(reduced_slot, e, offset_in(tr, r, reduced));
      c.phase("ALLGATHER");
      // allgather: every segment from wherever its owner reduced it
      for (int k = 0; k < n; ++k) {
        const int q = (r + k) % n;
        const std::size_t qseg = sp.offset(static_cast<std::size_t>(q)) * esz;
        std::byte* target = dst + first * esz + qseg;
        const std::byte* from = q == r ? reduced : tr.segment_base(q) + tr.wait_signal(q, reduced_slot, e, c.until());
        if (from != target) std::memcpy(target, from, sp.length(static_cast<std::size_t>(q)) * esz);
      }
    }
    // Peers may still be reading this rank's registered memory; the caller may rewrite it as soon
    // as we return. One more signal round (every rank takes it, registered or not) settles that.
    tr.signal(done_slot, e);
    wait_for_all(c, tr, done_slot, e);
  }

  //! in: count * n elements; out: this rank's reduced `count`.
  template <class Ctx>
  static void reduce_scatter(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    auto& tr = one_sided(c);
    const int n = c.size(), r = c.rank();
    const std::size_t esz = size_of(t);
    if (n == 1) return copy_if_distinct(out, in, count * esz);
    if (count == 0) return agree(c);
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    // The stage holds one chunk of every rank's block, block q at q * chunk.
    const std::size_t chunk = std::max<std::size_t>(1, tr.stage_bytes() / (esz * static_cast<std::size_t>(n)));
    for (std::size_t first = 0; first < count; first += chunk) {
      const std::size_t len = std::min(chunk, count - first);
      const auto e = tr.next_epoch();
      std::byte* stage = tr.stage(r, parity(e));
      // Only the blocks peers read are staged: this rank's own block is read where it is (in place,
      // out is that block, and each element is read before it is written).
      for (int q = 0; q < n; ++q)
        if (q != r)
          std::memcpy(stage + static_cast<std::size_t>(q) * len * esz,
                      src + (static_cast<std::size_t>(q) * count + first) * esz, len * esz);
      announce(c, tr, e, offset_in(tr, r, stage), first == 0);
      const std::size_t block = static_cast<std::size_t>(r) * len * esz;
      std::byte* target = dst + first * esz;
      const std::byte* own = src + (static_cast<std::size_t>(r) * count + first) * esz;
      tutti::reduce(t, o, target, own, peer_data(c, tr, (r + 1) % n, e) + block, len);
      for (int k = 2; k < n; ++k) tutti::reduce(t, o, target, target, peer_data(c, tr, (r + k) % n, e) + block, len);
      if (o == op::avg) finish_avg(t, target, len, n);
    }
  }

  //! in: count elements; out: count * n elements, rank q's at out + q * count.
  template <class Ctx>
  static void allgather(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    auto& tr = one_sided(c);
    const int n = c.size(), r = c.rank();
    const std::size_t esz = size_of(t);
    auto* dst = static_cast<std::byte*>(out);
    if (n == 1) return copy_if_distinct(dst + static_cast<std::size_t>(r) * count * esz, in, count * esz);
    if (count == 0) return agree(c);
    const auto* src = static_cast<const std::byte*>(in);
    const std::size_t chunk = std::max<std::size_t>(1, tr.stage_bytes() / esz);
    for (std::size_t first = 0; first < count; first += chunk) {
      const std::size_t len = std::min(chunk, count - first);
      const auto e = tr.next_epoch();
      std::memcpy(tr.stage(r, parity(e)), src + first * esz, len * esz);  // before any write to out: in may alias it
      announce(c, tr, e, offset_in(tr, r, tr.stage(r, parity(e))), first == 0);
      for (int k = 0; k < n; ++k) {
        const int q = (r + k) % n;
        std::memcpy(dst + (static_cast<std::size_t>(q) * count + first) * esz, peer_data(c, tr, q, e), len * esz);
      }
    }
  }

  template <class Ctx>
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t count, dtype t, int root) {
    auto& tr = one_sided(c);
    const int n = c.size(), r = c.rank();
    const std::size_t bytes = count * size_of(t);
    if (n == 1) return copy_if_distinct(out, in, bytes);
    if (bytes == 0) return agree(c);
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    for (std::size_t first = 0; first < bytes; first += tr.stage_bytes()) {
      const std::size_t len = std::min(tr.stage_bytes(), bytes - first);
      const auto e = tr.next_epoch();
      // Every rank announces the epoch (not only the root), so the root knows when all are done
      // with the stage it will reuse two epochs later.
      if (r == root) std::memcpy(tr.stage(r, parity(e)), src + first, len);
      announce(c, tr, e, offset_in(tr, r, tr.stage(r, parity(e))), first == 0);
      wait_for_all(c, tr, ready, e);
      if (r != root) std::memcpy(dst + first, tr.stage(root, parity(e)), len);
    }
    if (r == root) copy_if_distinct(out, in, bytes);
  }

  //! Every rank stages its input, chunk by chunk; root folds all of them, in rank order, straight
  //! into its output. Non-roots, too, see every peer announce each epoch before going on (as in
  //! every direct collective): a rank that has seen all peers reach epoch e knows they are done with
  //! epoch e-1's stages and payloads, which it will overwrite at epoch e+1.
  template <class Ctx>
  static void reduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, int root) {
    auto& tr = one_sided(c);
    const int n = c.size(), r = c.rank();
    const std::size_t esz = size_of(t);
    if (n == 1) return copy_if_distinct(out, in, count * esz);
    if (count == 0) return agree(c);
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    const std::size_t chunk = std::max<std::size_t>(1, tr.stage_bytes() / esz);
    for (std::size_t first = 0; first < count; first += chunk) {
      const std::size_t len = std::min(chunk, count - first);
      const auto e = tr.next_epoch();
      std::byte* stage = tr.stage(r, parity(e));
      if (r != root) std::memcpy(stage, src + first * esz, len * esz);
      announce(c, tr, e, offset_in(tr, r, stage), first == 0);
      if (r != root) {
        wait_for_all(c, tr, ready, e);
        continue;
      }
      // Root's own input first, then root+1, ..., root-1: in place is safe, since the first step
      // reads each element of `in` before writing the same element of `out`.
      std::byte* target = dst + first * esz;
      tutti::reduce(t, o, target, src + first * esz, peer_data(c, tr, (r + 1) % n, e), len);
      for (int k = 2; k < n; ++k) tutti::reduce(t, o, target, target, peer_data(c, tr, (r + k) % n, e), len);
      if (o == op::avg) finish_avg(t, target, len, n);
    }
  }

  //! Pairwise exchange over the transport's two-sided channels (one copy in, one out, per block),
  //! after the argument check that direct otherwise carries in its first signal.
  template <class Ctx>
  static void alltoall(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    if (c.descriptor() && c.size() > 1) agree(c);
    pairwise_alltoall(c, in, out, count, t);
  }

  template <class Ctx>
  static void barrier(Ctx& c) {
    auto& tr = one_sided(c);
    const auto e = announce(c, tr, tr.next_epoch(), 0, true);
    wait_for_all(c, tr, ready, e);
  }

 private:
  static constexpr unsigned ready = 0;         //!< signal: this rank's data for the epoch is in place
  static constexpr unsigned reduced_slot = 1;  //!< signal: this rank's reduced segment is ready (offset: where)
  static constexpr unsigned done_slot = 2;     //!< signal: this rank has finished reading peers' memory

  template <class Ctx>
  static auto& one_sided(Ctx& c) {
    using T = typename Ctx::transport_type;
    static_assert(one_sided_transport<T>,
                  "tutti::algorithm::direct requires a one-sided Transport (traits.one_sided, e.g. transport::shm); "
                  "use algorithm::ring with this transport");
    return c.transport();
  }

  //! Publishes this rank's data offset for epoch e. On a collective's first epoch it also publishes
  //! the rank's descriptor, waits for every peer's and judges them all (the same verdict on every
  //! rank), so a disagreement is found before any output is written.
  template <class Ctx, class T>
  static std::uint64_t announce(Ctx& c, T& tr, std::uint64_t e, std::size_t offset, bool first) {
    const collective_descriptor* d = first ? c.descriptor() : nullptr;
    static_assert(sizeof(collective_descriptor) <= T::max_payload);
    tr.signal(ready, e, offset, d, d ? sizeof(*d) : 0);
    if (!d) return e;
    auto all = c.descriptors();
    for (int q = 0; q < c.size(); ++q) {
      if (q != c.rank()) tr.wait_signal(q, ready, e, c.until());
      std::memcpy(&all[static_cast<std::size_t>(q)], q == c.rank() ? static_cast<const void*>(d) : tr.payload(q, e),
                  sizeof(collective_descriptor));
    }
    c.verify(all);
    return e;
  }

  //! Waits until every peer's signal `slot` has reached epoch e.
  template <class Ctx, class T>
  static void wait_for_all(Ctx& c, T& tr, unsigned slot, std::uint64_t e) {
    for (int q = 0; q < c.size(); ++q)
      if (q != c.rank()) tr.wait_signal(q, slot, e, c.until());
  }

  static unsigned parity(std::uint64_t epoch) noexcept { return static_cast<unsigned>(epoch & 1u); }

  template <class T>
  static std::size_t offset_in(T& tr, int r, const std::byte* p) noexcept {
    return static_cast<std::size_t>(p - tr.segment_base(r));
  }

  //! Where rank q's data for epoch e is, once q has published it.
  template <class Ctx, class T>
  static const std::byte* peer_data(Ctx& c, T& tr, int q, std::uint64_t e) {
    const std::size_t offset = tr.wait_signal(q, ready, e, c.until());
    return tr.segment_base(q) + offset;
  }
};

}  // namespace tutti::algorithm

// Named in the communicator's refusals where it has the collective (core/listed.hpp).
TUTTI_LIST_ALGORITHM_AT(2, "", tutti::algorithm::direct);
