//! @file halving_doubling.hpp  algorithm::halving_doubling — Rabenseifner's recursive halving and doubling.
//!
//! allreduce = recursive-halving reduce-scatter + recursive-doubling allgather (Rabenseifner). With
//! p = 2^k ranks: at step m = p/2, p/4, ..., 1 rank v swaps half of the range it still holds with
//! v ^ m and reduces the half it keeps, so after log2(p) steps it holds block v of p fully reduced;
//! the allgather runs the steps backwards (m = 1, 2, ..., p/2), each rank doubling what it holds.
//! Every block is reduced by one rank, so all ranks get the same bits.
//!
//! Fold-in, for n that is not a power of two: p = the largest power of two <= n, rem = n - p. Of
//! the first 2·rem ranks each odd one hands its whole vector to the even one below it, which
//! reduces it in and takes part in the power-of-two phase as virtual rank i/2; the odd one sits out
//! and gets the result at the end. Ranks i >= 2·rem are virtual rank i - rem. Virtual rank v thus
//! stands for ranks [first(v), first(v+1)), contiguous and in order, which keeps reduce_scatter's
//! and allgather's per-rank blocks contiguous too (virtual block v = the blocks of the ranks it
//! stands for). broadcast and reduce fold the ranks counted from root, so root always takes part.
//!
//! Costs (alpha-beta; alpha per message, beta per byte, gamma per reduced byte; S the vector):
//!   allreduce       2·log2(p)·alpha + 2(p-1)/p·S·beta + (p-1)/p·S·gamma,
//!                   + fold-in 2·alpha + 2·S·beta + S·gamma on the paired ranks (n not a power of two)
//!   reduce_scatter  log2(p)·alpha + (p-1)/p·S·beta (S = the n·count input) + fold-in alpha + S·beta
//!                   + one block back to the sitting-out rank
//!   allgather       log2(p)·alpha + (p-1)/p·S·beta (S = the n·count output) + fold-in: one block in,
//!                   the whole output back out
//!   broadcast       small: ceil(log2 n)·(alpha + S·beta), binomial tree;
//!                   large (van de Geijn): binomial scatter then allgather, ~2(log2 n)·alpha + 2(n-1)/n·S·beta
//!   reduce          small: ceil(log2 n)·(alpha + S·beta + S·gamma), binomial tree;
//!                   large: halving then a binomial gather of the blocks to root, 2·log2(p)·alpha + 2(p-1)/p·S·beta
//!   barrier         ceil(log2 n)·alpha, dissemination with 1-byte messages
//!   alltoall        blocks <= 256 B: Bruck, ceil(log2 n)·alpha + ~(n/2)·log2(n)·block·beta;
//!                   larger: the shared pairwise exchange (alltoall.hpp), (n-1)·alpha + (n-1)/n·S·beta
//!
//! Large allreduce, reduce_scatter and reduce go in rounds of p·chunk_bytes (each round a complete
//! collective on a slice), so scratch stays at most one or two slices however large the message,
//! and the last halving step still moves whole chunks. Zero-length pieces (counts smaller than p)
//! are skipped by both sides: sender and receiver compute the same lengths.
#pragma once
#include <algorithm>
#include <array>
#include <bit>
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
#include "tutti/tuner/halving_doubling.hpp"

namespace tutti::algorithm {

struct halving_doubling {
  using tutti_role = role::algorithm;
  static constexpr std::string_view name = "halving_doubling";
  //! allreduce carries lossy codecs (algorithm/compressed.hpp, XOR partners on powers of two).
  static constexpr bool carries_lossy_codecs = true;
  //! Its size crossovers (broadcast: binomial tree or scatter + allgather; reduce: binomial tree or
  //! Rabenseifner; alltoall: Bruck or pairwise) are tuner::halving_doubling_tuning, read per call.

  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    if constexpr (!Ctx::lossless) return lossy_allreduce(c, in, out, count, t, o, peer_order::xor_pairs);
    const int n = c.size(), r = c.rank();
    const std::size_t esz = size_of(t);
    if (n == 1 || count == 0) return copy_if_distinct(out, in, count * esz);
    const fold f{n};
    const std::size_t round = std::min(count, static_cast<std::size_t>(f.p) * chunk_elems(c.chunk_bytes(), esz));
    std::byte* incoming = c.scratch(round * esz);  // the partner's vector in the fold-in; half of it in halving
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    const auto rank_of = [&](int v) { return f.first(v); };
    for (std::size_t first = 0; first < count; first += round) {
      const std::size_t len = std::min(round, count - first), bytes = len * esz;
      const std::byte* mine = src + first * esz;
      std::byte* work = dst + first * esz;  // partial and final sums land in the output
      if (f.sits_out(r)) {
        c.phase("FOLD");
        send_all(c, r - 1, mine, bytes);
        recv_all(c, r - 1, work, bytes);
        continue;
      }
      if (f.hosts(r)) {
        c.phase("FOLD");
        recv_all(c, r + 1, incoming, bytes);
        tutti::reduce(t, o, work, mine, incoming, len);
        mine = work;
      }
      const split sp{len, static_cast<std::size_t>(f.p)};
      const auto at = [&](int v) { return sp.offset(static_cast<std::size_t>(v)) * esz; };
      const int v = f.virt(r);
      c.phase("REDUCE_SCATTER");
      halving(c, f.p, v, mine, work, incoming, at, rank_of, t, o);
      if (o == op::avg) finish_avg(t, work + at(v), sp.length(static_cast<std::size_t>(v)), n);
      c.phase("ALLGATHER");
      doubling(c, work, f.p, v, at, rank_of);
      if (f.hosts(r)) {
        c.phase("UNFOLD");
        send_all(c, r + 1, work, bytes);
      }
    }
  }

  //! in: count * n elements; out: this rank's `count` reduced elements (in place when
  //! out == in + rank * count). Halving runs over virtual blocks: virtual rank v's block is the
  //! blocks of the ranks it stands for, so a host ends up with its sitting-out partner's block too
  //! and sends it on.
  template <class Ctx>
  static void reduce_scatter(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    const int n = c.size(), r = c.rank();
    const std::size_t esz = size_of(t);
    if (n == 1 || count == 0) return copy_if_distinct(out, in, count * esz);
    const fold f{n};
    const auto ranks = static_cast<std::size_t>(n);
    // Each round takes `piece` elements of every block; a round's vector is n * piece elements.
    const std::size_t piece =
        std::min(count, std::max<std::size_t>(1, static_cast<std::size_t>(f.p) * chunk_elems(c.chunk_bytes(), esz) / ranks));
    const bool one_round = piece == count;  // then `in` already is the round's vector: no packing
    std::byte* work = c.scratch(2 * ranks * piece * esz);
    std::byte* incoming = work + ranks * piece * esz;
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    const auto rank_of = [&](int v) { return f.first(v); };
    for (std::size_t first = 0; first < count; first += piece) {
      const std::size_t len = std::min(piece, count - first), block = len * esz;
      const std::byte* mine = src;
      if (!one_round) {  // gather this round's slice of every block into one vector
        for (std::size_t q = 0; q < ranks; ++q) std::memcpy(work + q * block, src + (q * count + first) * esz, block);
        mine = work;
      }
      if (f.sits_out(r)) {
        send_all(c, r - 1, mine, ranks * block);
        recv_all(c, r - 1, dst + first * esz, block);
        continue;
      }
      if (f.hosts(r)) {
        recv_all(c, r + 1, incoming, ranks * block);
        tutti::reduce(t, o, work, mine, incoming, ranks * len);
        mine = work;
      }
      const int v = f.virt(r);
      const auto at = [&](int u) { return static_cast<std::size_t>(f.first(u)) * block; };
      halving(c, f.p, v, mine, work, incoming, at, rank_of, t, o);
      // work now holds the reduced blocks of ranks [first(v), first(v+1)): r's own and a partner's
      if (o == op::avg) finish_avg(t, work + at(v), (at(v + 1) - at(v)) / esz, n);
      typename Ctx::request sq{};
      if (f.hosts(r)) sq = c.send(r + 1, work + at(v) + block, block);
      std::memcpy(dst + first * esz, work + at(v), block);
      c.wait(sq);
    }
  }

  //! in: count elements; out: count * n elements, rank i's at out + i * count (in place when
  //! in == out + rank * count). Recursive doubling straight in the output: no scratch.
  template <class Ctx>
  static void allgather(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    const int n = c.size();
    const std::size_t bytes = count * size_of(t);
    auto* dst = static_cast<std::byte*>(out);
    copy_if_distinct(dst + static_cast<std::size_t>(c.rank()) * bytes, in, bytes);
    if (n == 1 || count == 0) return;
    gather_all(c, dst, n, c.rank(), [&](int i) { return static_cast<std::size_t>(i) * bytes; },
               [](int i) { return i; });
  }

  //! Small: binomial tree from root. Large: van de Geijn's — a binomial scatter of n segments
  //! (relative rank i gets segment i) and a recursive-doubling allgather of them.
  template <class Ctx>
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t count, dtype t, int root) {
    const int n = c.size();
    const std::size_t esz = size_of(t), bytes = count * esz;
    const int rel = wrap(c.rank() - root, n);
    const auto rank_of = [&](int i) { return (i + root) % n; };
    auto* dst = static_cast<std::byte*>(out);
    const std::byte* src = rel == 0 ? static_cast<const std::byte*>(in) : dst;  // what this rank passes on
    if (n == 1 || bytes == 0) {
      if (rel == 0) copy_if_distinct(out, in, bytes);
      return;
    }
    std::array<typename Ctx::request, 32> sends{};  // one per child: at most log2 of an int's range
    std::size_t k = 0;
    if (bytes < c.template tuning<tuner::halving_doubling_tuning>().scatter_broadcast_bytes || n < 3) {
      const int parent_bit = lowest_bit(rel, n);  // rel's subtree is [rel, rel + parent_bit)
      if (rel) recv_all(c, rank_of(rel - parent_bit), dst, bytes);
      for (int m = parent_bit / 2; m >= 1; m /= 2)
        if (rel + m < n) sends[k++] = c.send(rank_of(rel + m), src, bytes);
      for (auto& s : sends) c.wait(s);
      if (rel == 0) copy_if_distinct(out, in, bytes);
      return;
    }
    const split sp{count, static_cast<std::size_t>(n)};
    const auto at = [&](int i) { return sp.offset(static_cast<std::size_t>(i)) * esz; };
    const auto range = [&](int a, int b) { return at(std::min(b, n)) - at(a); };  // bytes of segments [a, b)
    const int parent_bit = lowest_bit(rel, n);
    if (rel) recv_all(c, rank_of(rel - parent_bit), dst + at(rel), range(rel, rel + parent_bit));
    for (int m = parent_bit / 2; m >= 1; m /= 2)
      if (rel + m < n && range(rel + m, rel + 2 * m))
        sends[k++] = c.send(rank_of(rel + m), src + at(rel + m), range(rel + m, rel + 2 * m));
    for (auto& s : sends) c.wait(s);
    if (rel == 0) copy_if_distinct(dst, in, at(1));  // root's own segment; the allgather brings the rest
    gather_all(c, dst, n, rel, at, rank_of);
  }

  //! out is written on root only. Small: binomial tree. Large: Rabenseifner's reduce — recursive
  //! halving, then the reduced blocks travel up a binomial tree to root (virtual rank 0).
  template <class Ctx>
  static void reduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, int root) {
    const int n = c.size();
    const std::size_t esz = size_of(t);
    if (n == 1) return copy_if_distinct(out, in, count * esz);
    if (count == 0) return;
    const int rel = wrap(c.rank() - root, n);
    const auto rank_of = [&](int i) { return (i + root) % n; };
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    if (count * esz <= c.template tuning<tuner::halving_doubling_tuning>().tree_reduce_bytes) return tree_reduce(c, src, dst, count, t, o, rel, rank_of);
    const fold f{n};
    const std::size_t round = std::min(count, static_cast<std::size_t>(f.p) * chunk_elems(c.chunk_bytes(), esz));
    // Root reduces in its output; the others need a slice of partial sums of their own.
    std::byte* incoming = c.scratch((rel == 0 ? 1 : 2) * round * esz);
    std::byte* partial = incoming + round * esz;
    const auto virtual_rank_of = [&](int v) { return rank_of(f.first(v)); };
    for (std::size_t first = 0; first < count; first += round) {
      const std::size_t len = std::min(round, count - first), bytes = len * esz;
      const std::byte* mine = src + first * esz;
      if (f.sits_out(rel)) {
        send_all(c, rank_of(rel - 1), mine, bytes);
        continue;
      }
      std::byte* work = rel == 0 ? dst + first * esz : partial;
      if (f.hosts(rel)) {
        recv_all(c, rank_of(rel + 1), incoming, bytes);
        tutti::reduce(t, o, work, mine, incoming, len);
        mine = work;
      }
      const split sp{len, static_cast<std::size_t>(f.p)};
      const auto at = [&](int v) { return sp.offset(static_cast<std::size_t>(v)) * esz; };
      const int v = f.virt(rel);
      halving(c, f.p, v, mine, work, incoming, at, virtual_rank_of, t, o);
      if (o == op::avg) finish_avg(t, work + at(v), sp.length(static_cast<std::size_t>(v)), n);
      // Binomial gather to virtual 0: at step m a rank whose bit m is set sends the m blocks it
      // holds, [v, v + m), to v - m, which then holds [v - m, v + m).
      for (int m = 1; m < f.p; m *= 2) {
        if (v & m) {
          send_all(c, virtual_rank_of(v - m), work + at(v), at(v + m) - at(v));
          break;
        }
        recv_all(c, virtual_rank_of(v + m), work + at(v + m), at(v + 2 * m) - at(v + m));
      }
    }
  }

  //! Dissemination: in round k rank r signals r + 2^k and waits for r - 2^k; after ceil(log2 n)
  //! rounds every rank has heard, transitively, from every other.
  template <class Ctx>
  static void barrier(Ctx& c) {
    const int n = c.size(), r = c.rank();
    std::byte* token = c.scratch(2);
    token[0] = std::byte{1};
    for (int k = 1; k < n; k *= 2) {
      auto rq = c.recv(wrap(r - k, n), token + 1, 1);
      auto sq = c.send((r + k) % n, token, 1);
      c.wait(rq);
      c.wait(sq);
    }
  }

  //! Bruck's algorithm for small blocks (ceil(log2 n) messages instead of n - 1), the shared
  //! pairwise exchange (alltoall.hpp) otherwise.
  template <class Ctx>
  static void alltoall(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    const std::size_t block = count * size_of(t);
    if (c.size() < 3 || block == 0 || block > c.template tuning<tuner::halving_doubling_tuning>().bruck_block_bytes)
      return pairwise_alltoall(c, in, out, count, t);
    bruck_alltoall(c, static_cast<const std::byte*>(in), static_cast<std::byte*>(out), block);
  }

 private:
  //! Folding n ranks (or slots) onto p = 2^floor(log2 n): of the first 2·rem, each odd one hands
  //! its data to the even one below and sits out. Virtual rank v stands for [first(v), first(v+1)).
  struct fold {
    int p, rem;
    explicit fold(int n) noexcept : p(static_cast<int>(std::bit_floor(static_cast<unsigned>(n)))), rem(n - p) {}
    [[nodiscard]] bool sits_out(int i) const noexcept { return i < 2 * rem && (i & 1); }
    [[nodiscard]] bool hosts(int i) const noexcept { return i < 2 * rem && !(i & 1); }
    [[nodiscard]] int virt(int i) const noexcept { return i < 2 * rem ? i / 2 : i - rem; }
    [[nodiscard]] int first(int v) const noexcept { return v < rem ? 2 * v : v + rem; }
  };

  //! The lowest set bit of rel (its parent is rel minus it), or the power of two >= n for root.
  static int lowest_bit(int rel, int n) noexcept {
    int m = 1;
    while (m < n && !(rel & m)) m *= 2;
    return m;
  }

  template <class Ctx>
  static void send_all(Ctx& c, int peer, const std::byte* data, std::size_t bytes) {
    if (!bytes) return;
    auto q = c.send(peer, data, bytes);
    c.wait(q);
  }
  template <class Ctx>
  static void recv_all(Ctx& c, int peer, std::byte* data, std::size_t bytes) {
    if (!bytes) return;
    auto q = c.recv(peer, data, bytes);
    c.wait(q);
  }

  //! Recursive halving among p = 2^k virtual ranks; block u of the vector is [at(u), at(u+1)).
  //! `mine` is this rank's contribution (the input at first, then `work`); on return `work` holds
  //! block v reduced over all p. Other parts of `work` are scribbled on; `incoming` holds half.
  template <class Ctx, class At, class RankOf>
  static void halving(Ctx& c, int p, int v, const std::byte* mine, std::byte* work, std::byte* incoming, At at,
                      RankOf rank_of, dtype t, op o) {
    const std::size_t esz = size_of(t);
    int lo = 0;  // work holds partial sums of blocks [lo, lo + 2m)
    for (int m = p / 2; m >= 1; m /= 2) {
      const bool upper = (v & m) != 0;
      const int keep = upper ? lo + m : lo, give = upper ? lo : lo + m;
      const std::size_t keep_at = at(keep), keep_bytes = at(keep + m) - keep_at;
      const std::size_t give_at = at(give), give_bytes = at(give + m) - give_at;
      const int peer = rank_of(v ^ m);
      typename Ctx::request rq{}, sq{};
      if (keep_bytes) rq = c.recv(peer, incoming, keep_bytes);
      if (give_bytes) sq = c.send(peer, mine + give_at, give_bytes);
      c.wait(rq);
      tutti::reduce(t, o, work + keep_at, mine + keep_at, incoming, keep_bytes / esz);
      c.wait(sq);
      mine = work;
      lo = keep;
    }
  }

  //! Recursive doubling among p = 2^k virtual ranks, in place in buf: rank v holds block v, and at
  //! step m = 1, 2, ..., p/2 swaps the m blocks it holds with v ^ m.
  template <class Ctx, class At, class RankOf>
  static void doubling(Ctx& c, std::byte* buf, int p, int v, At at, RankOf rank_of) {
    for (int m = 1; m < p; m *= 2) {
      const int mine = v & ~(m - 1), theirs = (v ^ m) & ~(m - 1);
      const std::size_t mine_bytes = at(mine + m) - at(mine), theirs_bytes = at(theirs + m) - at(theirs);
      typename Ctx::request rq{}, sq{};
      if (theirs_bytes) rq = c.recv(rank_of(v ^ m), buf + at(theirs), theirs_bytes);
      if (mine_bytes) sq = c.send(rank_of(v ^ m), buf + at(mine), mine_bytes);
      c.wait(rq);
      c.wait(sq);
    }
  }

  //! Allgather of n slots in place in buf: slot i is [at(i), at(i+1)), held by rank rank_of(i);
  //! this rank is slot `me`. Folds to a power of two: a sitting-out slot hands its block to the
  //! slot below and gets the whole buffer back at the end.
  template <class Ctx, class At, class RankOf>
  static void gather_all(Ctx& c, std::byte* buf, int n, int me, At at, RankOf rank_of) {
    const fold f{n};
    const std::size_t total = at(n) - at(0);
    if (f.sits_out(me)) {
      send_all(c, rank_of(me - 1), buf + at(me), at(me + 1) - at(me));
      recv_all(c, rank_of(me - 1), buf + at(0), total);
      return;
    }
    if (f.hosts(me)) recv_all(c, rank_of(me + 1), buf + at(me + 1), at(me + 2) - at(me + 1));
    doubling(c, buf, f.p, f.virt(me), [&](int v) { return at(f.first(v)); }, [&](int v) { return rank_of(f.first(v)); });
    if (f.hosts(me)) send_all(c, rank_of(me + 1), buf + at(0), total);
  }

  //! Bruck: rotate so that slot i holds the block for rank r + i; at step k = 1, 2, 4, ... send
  //! every slot with bit k set to r + k (it keeps its slot number); a block thus travels i ranks,
  //! to its destination, where slot i came from rank r - i.
  template <class Ctx>
  static void bruck_alltoall(Ctx& c, const std::byte* in, std::byte* out, std::size_t block) {
    const int n = c.size(), r = c.rank();
    const auto slots = static_cast<std::size_t>(n);
    std::byte* held = c.scratch(3 * slots * block);  // held slots, then send and receive packing
    std::byte* packed_out = held + slots * block;
    std::byte* packed_in = packed_out + slots * block;
    const auto slot = [block](auto* base, int i) { return base + static_cast<std::size_t>(i) * block; };
    for (int i = 0; i < n; ++i) std::memcpy(slot(held, i), slot(in, (r + i) % n), block);
    for (int k = 1; k < n; k *= 2) {
      int m = 0;
      for (int i = k; i < n; ++i)
        if (i & k) std::memcpy(slot(packed_out, m++), slot(held, i), block);
      auto rq = c.recv(wrap(r - k, n), packed_in, static_cast<std::size_t>(m) * block);
      auto sq = c.send((r + k) % n, packed_out, static_cast<std::size_t>(m) * block);
      c.wait(rq);
      c.wait(sq);
      m = 0;
      for (int i = k; i < n; ++i)
        if (i & k) std::memcpy(slot(held, i), slot(packed_in, m++), block);
    }
    for (int i = 0; i < n; ++i) std::memcpy(slot(out, wrap(r - i, n)), slot(held, i), block);  // in place is safe: in was read first
  }

  //! Binomial reduce to relative rank 0: at step m a rank with bit m set sends what it has to
  //! rel - m and is done; the others add in rel + m's.
  template <class Ctx, class RankOf>
  static void tree_reduce(Ctx& c, const std::byte* in, std::byte* out, std::size_t count, dtype t, op o, int rel,
                          RankOf rank_of) {
    const int n = c.size();
    const std::size_t bytes = count * size_of(t);
    std::byte* incoming = c.scratch(2 * bytes);
    std::byte* acc = rel == 0 ? out : incoming + bytes;
    const std::byte* mine = in;
    for (int m = 1; m < n; m *= 2) {
      if (rel & m) return send_all(c, rank_of(rel - m), mine, bytes);
      if (rel + m < n) {
        recv_all(c, rank_of(rel + m), incoming, bytes);
        tutti::reduce(t, o, acc, mine, incoming, count);
        mine = acc;
      }
    }
    if (o == op::avg) finish_avg(t, out, count, n);  // root (rel 0) only: everyone else has returned
  }
};

}  // namespace tutti::algorithm

// Named in the communicator's refusals where it has the collective (core/listed.hpp).
TUTTI_LIST_ALGORITHM_AT(4, "", tutti::algorithm::halving_doubling);
