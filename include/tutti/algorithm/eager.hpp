//! @file eager.hpp  algorithm::eager — a small collective in one round, the ranks' argument check
//! riding in the same messages.
//!
//! Every rank sends every other one fixed-size frame: its collective_descriptor (32 bytes) and up
//! to `inline_bytes` of its data. Having every rank's descriptor, every rank judges them alike
//! (core/collective.hpp) and, when they agree, finishes from the frames alone: allreduce and
//! reduce reduce them in rank order (so every rank gets the same bits), allgather copies them out,
//! broadcast takes the root's. One message latency in all, where the communicator's separate check
//! and a ring or hierarchical schedule cost two or more: across hosts the difference is whole
//! network round trips (docs/algorithms.md has the measurements).
//!
//! The frame's size never depends on the call, so ranks that disagree about the count (or the
//! collective) still exchange frames that match, and every rank sees the same mismatch instead of
//! a transport error or a hang. Larger calls (and reduce_scatter, alltoall, lossy codecs) exchange
//! the frames as the check alone, then run `ring`. As the check of `tuned<...>` and `automatic`
//! across hosts (their `agree()`), the frame replaces the communicator's 32-byte round: the same
//! one round, `inline_bytes` larger.
//!
//! n - 1 messages per rank per call: meant for the small calls and world sizes where latency, not
//! the message count, decides (tuned's table, or automatic's rule, says where).
#pragma once
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "tutti/algorithm/context.hpp"
#include "tutti/algorithm/helpers.hpp"
#include "tutti/algorithm/ring.hpp"
#include "tutti/core/collective.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/listed.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/core/reduce.hpp"
#include "tutti/transport/exchange.hpp"

namespace tutti::algorithm {

struct eager {
  using tutti_role = role::algorithm;
  static constexpr std::string_view name = "eager";
  //! The data a frame carries: calls of at most this many bytes (per rank's block for allgather)
  //! finish in the check's round. 1 KiB: on a 1 Gbit/s link a frame costs ~8 µs more than the bare
  //! descriptor, against a network round trip saved.
  static constexpr std::size_t inline_bytes = 1024;
  //! allreduce with a lossy codec: the check's round, then the two-sided schedule every algorithm shares.
  static constexpr bool carries_lossy_codecs = true;
  //! Over any transport: the frames carry the descriptors.
  template <class Transport>
  static constexpr bool checks_arguments = true;

  //! What one rank sends every other: its descriptor, then its data (the rest is left as it was).
  struct frame {
    collective_descriptor call;
    std::byte data[inline_bytes];
  };

  //! Whether a call of `bytes` (as each collective below counts them) finishes in the check's round.
  [[nodiscard]] static constexpr bool fits(std::size_t bytes) noexcept { return bytes <= inline_bytes; }

  //! The check alone: the frames with no data (a rank that refused its own arguments, a larger call).
  template <class Ctx>
  static void agree(Ctx& c) {
    if (c.size() > 1) exchange(c, nullptr, 0);
  }

  //! The check's round where the communicator asked for one, before a schedule that does not
  //! check (ring here; automatic's choice); what runs next in this call checks nothing again.
  template <class Ctx>
  static void check_first(Ctx& c) {
    if (!c.descriptor()) return;
    agree(c);
    c.mark_checked();
  }

  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    const std::size_t bytes = count * size_of(t);
    if (!Ctx::lossless || !fits(bytes)) {
      check_first(c);
      return ring::allreduce(c, in, out, count, t, o);
    }
    if (c.size() == 1) return copy_if_distinct(out, in, bytes);
    const frame* all = exchange(c, in, bytes);
    reduce_frames(c, all, out, count, t, o);
  }

  template <class Ctx>
  static void reduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, int root) {
    const std::size_t bytes = count * size_of(t);
    if (!fits(bytes)) {
      check_first(c);
      return ring::reduce(c, in, out, count, t, o, root);
    }
    if (c.size() == 1) return copy_if_distinct(out, in, bytes);
    const frame* all = exchange(c, in, bytes);
    if (c.rank() == root) reduce_frames(c, all, out, count, t, o);
  }

  template <class Ctx>
  static void allgather(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    const std::size_t bytes = count * size_of(t);
    if (!fits(bytes)) {
      check_first(c);
      return ring::allgather(c, in, out, count, t);
    }
    const int n = c.size(), r = c.rank();
    auto* dst = static_cast<std::byte*>(out);
    if (n == 1) return copy_if_distinct(dst, in, bytes);
    const frame* all = exchange(c, in, bytes);
    for (int p = 0; p < n; ++p)
      if (p != r && bytes) std::memcpy(dst + static_cast<std::size_t>(p) * bytes, all[p].data, bytes);
    copy_if_distinct(dst + static_cast<std::size_t>(r) * bytes, in, bytes);  // in may already be there
  }

  template <class Ctx>
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t count, dtype t, int root) {
    const std::size_t bytes = count * size_of(t);
    if (!fits(bytes)) {
      check_first(c);
      return ring::broadcast(c, in, out, count, t, root);
    }
    const bool mine = c.rank() == root;
    if (c.size() == 1 || mine) {
      if (c.size() > 1) exchange(c, in, bytes);
      return copy_if_distinct(out, in, bytes);
    }
    const frame* all = exchange(c, nullptr, 0);
    if (bytes) std::memcpy(out, all[root].data, bytes);
  }

  template <class Ctx>
  static void reduce_scatter(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    check_first(c);
    ring::reduce_scatter(c, in, out, count, t, o);
  }

  template <class Ctx>
  static void alltoall(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    check_first(c);
    ring::alltoall(c, in, out, count, t);
  }

  //! The frames' round is a barrier: nobody's arrives before everybody has sent.
  template <class Ctx>
  static void barrier(Ctx& c) {
    agree(c);
  }

 private:
  //! This communicator's frames (rank p's at [p]) and requests, reused call after call.
  template <class Transport>
  struct state {
    std::vector<frame> frames;
    std::vector<typename Transport::request> pending;
  };

  //! Sends this rank's frame (its descriptor and `bytes` of `data`) to every rank, receives theirs,
  //! and judges the descriptors (when the communicator asked for a check): every rank throws the
  //! same mismatch or refusal, or returns the frames.
  template <class Ctx>
  static const frame* exchange(Ctx& c, const void* data, std::size_t bytes) {
    using T = typename Ctx::transport_type;
    auto& s = c.template state<state<T>>([] { return std::make_shared<state<T>>(); });
    const int n = c.size(), r = c.rank();
    s.frames.resize(static_cast<std::size_t>(n));
    frame& own = s.frames[static_cast<std::size_t>(r)];
    own.call = c.descriptor() ? *c.descriptor() : collective_descriptor{};
    if (bytes) std::memcpy(own.data, data, bytes);
    c.phase("EAGER");
    transport::exchange_with_all(c.transport(), c.tag(), std::span(s.frames), c.until(), s.pending);
    if (c.descriptor()) {
      std::span<collective_descriptor> calls = c.descriptors();
      for (int p = 0; p < n; ++p) calls[static_cast<std::size_t>(p)] = s.frames[static_cast<std::size_t>(p)].call;
      c.verify(calls);
    }
    return s.frames.data();
  }

  //! out = frame 0 (op) frame 1 (op) ... in rank order: the same bits on every rank.
  template <class Ctx>
  static void reduce_frames(Ctx& c, const frame* all, void* out, std::size_t count, dtype t, op o) {
    const int n = c.size();
    if (count == 0) return;
    std::memcpy(out, all[0].data, count * size_of(t));
    for (int p = 1; p < n; ++p) Ctx::reduce(t, o, out, out, all[p].data, count);
    if (o == op::avg) finish_avg(t, out, count, n);
  }
};

}  // namespace tutti::algorithm

// Named in the communicator's refusals where it has the collective (core/listed.hpp).
TUTTI_LIST_ALGORITHM_AT(8, "", tutti::algorithm::eager);
