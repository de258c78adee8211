//! @file eager.hpp  algorithm::eager — a small collective in log2(n) rounds of recursive doubling,
//! the ranks' argument check riding in the same messages.
//!
//! Round k pairs rank r with r xor 2^k (ranks past the largest power of two first hand their frame
//! to a partner below it and get the result back at the end). Each message is a frame: the
//! descriptors (core/collective.hpp) of every rank the sender has heard from so far, and the data
//! the collective needs from them: allreduce and reduce the partial result, broadcast the root's
//! data once it has it, allgather the blocks it holds. After the rounds every rank has every
//! descriptor, judges them alike, and when they agree finishes from what it accumulated:
//! log2(n) message latencies and one message per rank per round, where the communicator's separate
//! check and a ring schedule cost 2(n - 1) + 1 (Open MPI's small allreduce is the same recursive
//! doubling, without the check). Partial results combine lower block first, so every rank gets
//! the same bits. reduce_scatter halves recursively in the same rounds while all n blocks fit a
//! frame; above, it and alltoall run the rounds as the check, then one round of direct messages
//! (each block straight to its rank: alltoall.hpp's pairwise exchange).
//!
//! Frames are received into buffers of the largest frame's size whatever the call, and sent with
//! only what the call uses (transport::recv_up_to; a transport without it sends whole frames):
//! ranks that disagree about the count or the collective still exchange frames that match, every
//! rank sees the same mismatch instead of a transport error or a hang, and no output buffer is
//! written before the descriptors agree. Larger calls (and lossy codecs) run the rounds as the
//! check alone, then `ring`. As the check of `tuned<...>` and `automatic` across hosts (their
//! `agree()`), the rounds replace the communicator's own.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/algorithm/alltoall.hpp"
#include "tutti/algorithm/context.hpp"
#include "tutti/algorithm/helpers.hpp"
#include "tutti/algorithm/recursive_doubling.hpp"
#include "tutti/algorithm/ring.hpp"
#include "tutti/core/collective.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/listed.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/core/reduce.hpp"
#include "tutti/transport/concepts.hpp"

namespace tutti::algorithm {

struct eager {
  using tutti_role = role::algorithm;
  static constexpr std::string_view name = "eager";
  //! The most data a frame carries on n ranks: allreduce, reduce, broadcast of up to this many
  //! bytes, allgather of up to this many in all, reduce_scatter whose largest frame holds up to
  //! this many (halves(): up to twice it in all on a power of two of ranks) finish in eager's own
  //! rounds (reduce_scatter and alltoall blocks of up to this many after them, in one direct round). 16 KiB: on the namespace hosts measured (docs/algorithms.md)
  //! log2(n) rounds of it beat the check and ring's 2(n - 1) steps on 2 to 4 hosts, shaped or not;
  //! recursive doubling sends log2(n) S per rank against ring's 2(n - 1)/n S, so the limit stays
  //! small. On 2 ranks both send S and eager's one message saves ring's second step and the
  //! check: 64 KiB there (above it the frame's copies cost what the latencies save).
  [[nodiscard]] static constexpr std::size_t capacity(int n) noexcept { return n <= 2 ? 65536 : 16384; }
  //! allreduce with a lossy codec: the check's rounds, then the two-sided schedule every algorithm shares.
  static constexpr bool carries_lossy_codecs = true;
  //! Over any transport: the frames carry the descriptors.
  template <class Transport>
  static constexpr bool checks_arguments = true;

  //! Whether eager finishes a call on n ranks when the most data one frame of it must carry
  //! is `frame_bytes` (allreduce, reduce, broadcast: the buffer; allgather: all ranks' blocks;
  //! reduce_scatter, alltoall: one block; a reduce_scatter whose n blocks fit halves in the rounds,
  //! one whose single block fits checks, then sends the blocks directly): else it checks, then runs ring.
  [[nodiscard]] static constexpr bool finishes(int n, std::size_t frame_bytes) noexcept {
    return frame_bytes <= capacity(n);
  }

  //! The check alone: the rounds with descriptors only (a rank that refused its own arguments, a larger call).
  template <class Ctx>
  static void agree(Ctx& c) {
    if (c.size() > 1) rounds(c, rd_payload::none{});
  }

  //! The check's rounds where the communicator asked for one, before a schedule that does not
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
    if (!Ctx::lossless || !finishes(c.size(), bytes)) {
      check_first(c);
      return ring::allreduce(c, in, out, count, t, o);
    }
    if (c.size() == 1) return copy_if_distinct(out, in, bytes);
    combine(c, in, count, t, o);
    copy_if_distinct(out, state_of(c).acc.data(), bytes);
  }

  template <class Ctx>
  static void reduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, int root) {
    const std::size_t bytes = count * size_of(t);
    if (!finishes(c.size(), bytes)) {
      check_first(c);
      return ring::reduce(c, in, out, count, t, o, root);
    }
    if (c.size() == 1) return copy_if_distinct(out, in, bytes);
    combine(c, in, count, t, o);  // every rank reduces (the same rounds); the root keeps it
    if (c.rank() == root) copy_if_distinct(out, state_of(c).acc.data(), bytes);
  }

  template <class Ctx>
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t count, dtype t, int root) {
    const std::size_t bytes = count * size_of(t);
    if (!finishes(c.size(), bytes)) {
      check_first(c);
      return ring::broadcast(c, in, out, count, t, root);
    }
    if (c.size() == 1 || c.rank() == root) {
      if (c.size() > 1) rounds(c, rd_payload::from_root{root, in, bytes, nullptr});
      return copy_if_distinct(out, in, bytes);
    }
    auto& s = state_of(c);
    rounds(c, rd_payload::from_root{root, nullptr, bytes, s.acc.data()});
    if (bytes) std::memcpy(out, s.acc.data(), bytes);
  }

  template <class Ctx>
  static void allgather(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    const std::size_t bytes = count * size_of(t);
    const auto n = static_cast<std::size_t>(c.size());
    if (!finishes(c.size(), n * bytes)) {
      check_first(c);
      return ring::allgather(c, in, out, count, t);
    }
    auto* dst = static_cast<std::byte*>(out);
    if (n == 1) return copy_if_distinct(dst, in, bytes);
    auto& s = state_of(c);
    std::memcpy(s.acc.data() + static_cast<std::size_t>(c.rank()) * bytes, in, bytes);
    rounds(c, rd_payload::blocks{bytes, s.acc.data()});
    std::memcpy(dst, s.acc.data(), n * bytes);  // in may be block rank() of out: acc holds it too
  }

  //! Whether reduce_scatter of `block` bytes per rank halves inside the rounds on n ranks: its
  //! largest frame (an extra's whole input; else the first round's half) fits the capacity, and
  //! the n blocks the accumulator (twice the capacity).
  [[nodiscard]] static constexpr bool halves(int n, std::size_t block) noexcept {
    const auto all = static_cast<std::size_t>(n) * block;
    const std::size_t largest = n > rd_core_ranks(n) ? all : all / 2;
    return n > 1 && largest <= capacity(n) && all <= 2 * capacity(n);
  }

  //! Recursive halving in the rounds where it fits (halves(), rd_payload::halving). Else the
  //! check's rounds, then block p of `in` straight to rank p (pairwise_alltoall: one round up to
  //! 9 ranks, its window of 8 steps beyond); each reduces its own, in rank order.
  template <class Ctx>
  static void reduce_scatter(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    const std::size_t bytes = count * size_of(t);
    const int n = c.size();
    if (halves(n, bytes)) {
      auto& s = state_of(c);
      copy_if_distinct(s.acc.data(), in, static_cast<std::size_t>(n) * bytes);
      rounds(c, rd_payload::halving{t, o, count, s.acc.data(), n, rd_core_ranks(n), c.rank(), &Ctx::reduce});
      std::byte* mine = s.acc.data() + static_cast<std::size_t>(c.rank()) * bytes;
      if (o == op::avg) finish_avg(t, mine, count, n);
      return copy_if_distinct(out, mine, bytes);
    }
    check_first(c);
    if (!finishes(n, bytes)) return ring::reduce_scatter(c, in, out, count, t, o);
    if (n == 1) return copy_if_distinct(out, in, bytes);
    std::byte* got = c.scratch(static_cast<std::size_t>(n) * bytes);  // block r of every rank's `in`, by rank
    pairwise_alltoall(c, in, got, count, t);
    for (int p = 1; p < n; ++p) Ctx::reduce(t, o, got, got, got + static_cast<std::size_t>(p) * bytes, count);
    if (o == op::avg) finish_avg(t, got, count, n);
    copy_if_distinct(out, got, bytes);
  }

  //! The check's rounds, then block p of `in` straight to rank p (pairwise_alltoall).
  template <class Ctx>
  static void alltoall(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    const std::size_t bytes = count * size_of(t);
    check_first(c);
    if (!finishes(c.size(), bytes)) return ring::alltoall(c, in, out, count, t);
    pairwise_alltoall(c, in, out, count, t);
  }

  //! The rounds are a barrier: nobody's last frame arrives before everybody has sent a first.
  template <class Ctx>
  static void barrier(Ctx& c) {
    agree(c);
  }

 private:
  //! Per communicator: the rounds' plan for this rank, frame buffers, the accumulated data.
  template <class Transport>
  struct state {
    rd_plan plan;
    std::vector<std::byte> send, receive, acc;
    std::vector<collective_descriptor> calls;
  };

  template <class Ctx>
  static auto& state_of(Ctx& c) {
    using T = typename Ctx::transport_type;
    auto& s = c.template state<state<T>>([] { return std::make_shared<state<T>>(); });
    if (s.calls.empty()) {
      const auto n = static_cast<std::size_t>(c.size());
      s.plan = rd_plan(c.rank(), c.size());
      s.calls.resize(n);
      s.send.resize(rd_frame_bytes(n, capacity(c.size())));
      s.receive.resize(s.send.size());
      s.acc.resize(2 * capacity(c.size()));  // reduce_scatter's n blocks (halves())
    }
    return s;
  }

  //! The rounds reducing every rank's `in` into state's acc (count elements), in place of none.
  template <class Ctx>
  static void combine(Ctx& c, const void* in, std::size_t count, dtype t, op o) {
    auto& s = state_of(c);
    const std::size_t bytes = count * size_of(t);
    copy_if_distinct(s.acc.data(), in, bytes);
    rounds(c, rd_payload::reduction{t, o, count, s.acc.data(), &Ctx::reduce});
    if (o == op::avg) finish_avg(t, s.acc.data(), count, c.size());
  }

  //! Runs the plan's steps with `payload`, then judges the descriptors (when the communicator asked
  //! for a check): every rank throws the same mismatch or refusal, or has what payload gathered.
  //! A frame whose data is not the size this rank's call expects is only possible when the
  //! descriptors differ (then the mismatch is what every rank throws), this rank refused its own
  //! arguments (the communicator throws its reason), or nothing checked them (an error here).
  template <class Ctx, class Payload>
  static void rounds(Ctx& c, Payload&& payload) {
    using T = typename Ctx::transport_type;
    auto& s = state_of(c);
    const collective_descriptor own = c.descriptor() ? *c.descriptor() : collective_descriptor{};
    s.calls[static_cast<std::size_t>(c.rank())] = own;
    c.phase("EAGER");
    bool consistent = true;
    int odd_peer = -1;  // the first frame whose data was not the size expected: from whom, how much
    std::size_t odd_bytes = 0;
    auto& tr = c.transport();
    for (const rd_step& step : s.plan.steps) {
      typename T::request received, sent;  // default: already complete
      std::size_t arrived = 0;
      if (!step.theirs.empty()) {
        if constexpr (sized_receive_transport<T>)
          received = tr.recv_up_to(step.partner, c.tag(), s.receive.data(), s.receive.size(), &arrived);
        else received = tr.recv(step.partner, c.tag(), s.receive.data(), s.receive.size());
      }
      if (!step.mine.empty()) {
        const std::size_t used = rd_pack(s.calls, step, payload, s.send.data());
        sent = tr.send(step.partner, c.tag(), s.send.data(), sized_receive_transport<T> ? used : s.send.size());
      }
      tr.wait(received, c.until());  // the transport's deadline names the partner waited on
      tr.wait(sent, c.until());
      if (step.theirs.empty()) continue;
      if constexpr (!sized_receive_transport<T>) arrived = s.receive.size();
      if (!rd_unpack(s.calls, step, payload, s.receive.data(), arrived) && consistent) {
        consistent = false;
        odd_peer = step.partner;
        odd_bytes = arrived - std::min(arrived, step.theirs.size() * sizeof(collective_descriptor));
      }
    }
    if (c.descriptor()) {
      c.verify(s.calls);  // returns for a rank that refused its own arguments: it has no data to take
      return;
    }
    if (!consistent)
      throw invalid_argument(c.where() + "eager: rank " + std::to_string(odd_peer) + "'s frame held " +
                             std::to_string(odd_bytes) + " bytes of data, not what this rank's call expects (the ranks' "
                             "calls differ and were not checked)");
  }
};

}  // namespace tutti::algorithm

// Named in the communicator's refusals where it has the collective (core/listed.hpp).
TUTTI_LIST_ALGORITHM_AT(8, "", tutti::algorithm::eager);
