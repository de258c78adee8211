//! @file tree.hpp  algorithm::tree — pipelined double binary tree (NCCL's scheme): log2(n) latency.
//!
//! Two binary trees span the ranks; each carries half of the buffer. Tree 0 is an in-order binary
//! tree over the labels 1..n (label x with lowest set bit b has children x - b/2 and x + b/2, the
//! right one pulled in while it is past n), so odd labels are its leaves and even labels its
//! interior nodes. Tree 1 is tree 0 shifted by one rank: a rank is interior in at most one tree
//! (of two neighbouring labels exactly one is even), so every rank receives from at most two
//! children in all and the two halves keep all links busy in both directions at once. Ranks are
//! numbered relative to a root (virtual rank v = (rank - root + n) % n): tree 0 is rooted at
//! v = 0, tree 1 at v = 1, and v = 0 is a leaf of tree 1. The shape is the same on every call, so
//! the reduction order is too: at each node, (own input op first child) op second child.
//!
//! - allreduce: each half is reduced up its tree, chunk by chunk, and broadcast back down from its
//!   root (roots 0 and 1), the broadcast of chunk k overlapping the reduction of later chunks.
//! - reduce(root): both halves go up; tree 1's root forwards its result to root (one more hop).
//! - broadcast(root): half 0 goes down tree 0; half 1 goes root -> v = 1 -> down tree 1.
//! - barrier: 1-byte tokens up tree 0 and back down.
//!
//! Pipelining, without deadlock on any transport. Every message has a stamp (step s, phase):
//! phases run U0, U1 (reduce up tree 0, tree 1), D0, D1 (distribute down) within a step, and the
//! receiver posts each receive at the stamp at which the sender posts the send, so messages between
//! any two ranks (who may be linked in both trees) match in order. At U(s) a rank receives chunk s
//! from its children, reduces and sends it up. A rank at depth d of the down tree forwards chunk
//! s - d at D(s), which its parent sent at D(s-1): so a chunk descends one level per step while
//! later chunks climb, and no wait at a stamp needs anybody to be past that stamp. Requests are
//! kept in windows of `window` chunks, so scratch is a few chunks however large the message.
//!
//! Cost (alpha-beta, D = floor(log2 n) = tree depth, C = chunk bytes, S = message bytes):
//! allreduce ~ (2D + S/(2C)) steps of (alpha + C beta) each: latency 2 log2(n) alpha where ring
//! pays 2(n-1) alpha; each rank sends and receives about 2S (S/2 up each tree, S down to the two
//! children in the tree where it is interior) against ring's 2(n-1)/n S. Wins for small and
//! medium messages and many ranks; ring wins for large messages on few ranks.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <string_view>

#include "tutti/algorithm/context.hpp"
#include "tutti/algorithm/helpers.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/listed.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/core/reduce.hpp"
#include "tutti/tuner/tree.hpp"

namespace tutti::algorithm {

struct tree {
  using tutti_role = role::algorithm;
  static constexpr std::string_view name = "tree";

  //! One rank's place in one of the two trees, in virtual ranks (-1: none).
  struct node {
    int parent = -1;                       //!< -1 at the root
    std::array<int, 2> children = {-1, -1};  //!< children[1] is -1 when there is only one
    int depth = 0;                         //!< edges from the root
    [[nodiscard]] constexpr int child_count() const noexcept { return (children[0] >= 0) + (children[1] >= 0); }
  };

  //! Virtual rank v's node in tree `which` (0 or 1) of the double binary tree over n ranks.
  //! Tree 0 is rooted at 0, tree 1 at 1 (n > 1); no rank is interior in both.
  static constexpr node shape(int n, int v, int which) noexcept {
    int p = 1;  // largest power of two <= n: the label of the root
    while (p <= n / 2) p *= 2;
    const auto label = [&](int u) { return (u - which + p - 1 + n) % n + 1; };
    const auto rank = [&](int x) { return (x - p + which + n) % n; };
    const int x = label(v);
    node s;
    const int up = label_parent(x, n);
    s.parent = up ? rank(up) : -1;
    const int b = x & -x;
    if (b > 1) {
      s.children[0] = rank(x - b / 2);
      for (int h = b / 2; h >= 1; h /= 2)
        if (x + h <= n) {
          s.children[1] = rank(x + h);
          break;
        }
    }
    for (int y = up; y; y = label_parent(y, n)) ++s.depth;
    return s;
  }

  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    const int n = c.size();
    const std::size_t esz = size_of(t);
    if (n == 1 || count == 0) return copy_if_distinct(out, in, count * esz);
    std::array<lane, 2> lanes;
    for (int w = 0; w < 2; ++w) {
      const node s = shape(n, c.rank(), w);
      lane& l = lanes[static_cast<std::size_t>(w)];
      l.reduces = l.distributes = true;
      l.up_parent = l.down_parent = s.parent;
      l.up_children = l.down_children = s.children;
      l.down_depth = s.depth;
    }
    // partial sums live in the output, which the final result overwrites anyway
    c.phase("REDUCE_UP_BROADCAST_DOWN");  // pipelined: both directions at once
    run(c, lanes, 0, mode::allreduce, false, in, out, count, t, o);
  }

  //! out is written on root only (null elsewhere); in place on root when in == out.
  template <class Ctx>
  static void reduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, int root) {
    const int n = c.size();
    const std::size_t esz = size_of(t);
    if (n == 1) return copy_if_distinct(out, in, count * esz);
    if (count == 0) return;
    const int v = (c.rank() - root + n) % n;
    std::array<lane, 2> lanes;
    for (int w = 0; w < 2; ++w) {
      const node s = shape(n, v, w);
      lane& l = lanes[static_cast<std::size_t>(w)];
      l.reduces = true;
      l.up_parent = s.parent;
      l.up_children = s.children;
    }
    // Tree 1 ends at v = 1, one hop from root (v = 0, a leaf of tree 1): a down "tree" of one edge.
    lane& second = lanes[1];
    if (v == 1) second.down_children = {0, -1};
    if (v == 0) {
      second.down_parent = 1;
      second.down_depth = 1;
    }
    second.distributes = v <= 1;
    // off root, partial sums go to scratch: out is root's only
    run(c, lanes, root, mode::reduce, v != 0, in, out, count, t, o);
  }

  template <class Ctx>
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t count, dtype t, int root) {
    const int n = c.size();
    const std::size_t bytes = count * size_of(t);
    const int v = (c.rank() - root + n) % n;
    if (n > 1 && count > 0) {
      std::array<lane, 2> lanes;
      const node s0 = shape(n, v, 0), s1 = shape(n, v, 1);
      lanes[0].distributes = true;
      lanes[0].down_parent = s0.parent;
      lanes[0].down_children = s0.children;
      lanes[0].down_depth = s0.depth;
      // Tree 1 is fed by root (a leaf of tree 1, so it can leave it): root -> v = 1 -> the rest.
      lane& l = lanes[1];
      l.distributes = true;
      if (v == 0) {
        l.down_children = {1, -1};
      } else {
        l.down_parent = v == 1 ? 0 : s1.parent;
        l.down_depth = s1.depth + 1;
        for (std::size_t i = 0, j = 0; i < 2; ++i)
          if (s1.children[i] > 0) l.down_children[j++] = s1.children[i];
      }
      run(c, lanes, root, mode::broadcast, false, in, out, count, t, op::sum);
    }
    if (v == 0) copy_if_distinct(out, in, bytes);
  }

  //! Tokens gathered up tree 0 to rank 0, then released back down: 2 D alpha.
  template <class Ctx>
  static void barrier(Ctx& c) {
    const int n = c.size();
    if (n == 1) return;
    const node s = shape(n, c.rank(), 0);
    std::byte* token = c.scratch(4);  // [0] sent, [1], [2] from children, [3] from parent
    token[0] = std::byte{1};
    std::array<typename Ctx::request, 2> from_children{}, to_children{};
    for (std::size_t i = 0; i < 2; ++i)
      if (s.children[i] >= 0) from_children[i] = c.recv(s.children[i], token + 1 + i, 1);
    for (auto& r : from_children) c.wait(r);
    if (s.parent >= 0) {
      auto up = c.send(s.parent, token, 1);
      auto down = c.recv(s.parent, token + 3, 1);
      c.wait(up);
      c.wait(down);
    }
    for (std::size_t i = 0; i < 2; ++i)
      if (s.children[i] >= 0) to_children[i] = c.send(s.children[i], token, 1);
    for (auto& r : to_children) c.wait(r);
  }

 private:
  static constexpr std::size_t window = tuner::tree_tuning::window;  //!< chunks whose sends may be in flight per tree

  enum class mode { allreduce, reduce, broadcast };

  //! What this rank does for one tree's half of the buffer (peers in virtual ranks).
  struct lane {
    bool reduces = false;                       //!< the half is reduced up the tree
    int up_parent = -1;                         //!< -1: root of the reduction
    std::array<int, 2> up_children = {-1, -1};
    bool distributes = false;                   //!< the half (a result, or root's data) flows down
    int down_parent = -1;                       //!< -1: where the distributed data starts
    std::array<int, 2> down_children = {-1, -1};
    int down_depth = 0;                         //!< the step lag: chunk k is forwarded at step k + depth
  };

  //! Finds label x's parent in the in-order tree on labels 1..m (0 at the root, label m's power of two).
  static constexpr int label_parent(int x, int m) noexcept {
    const int b = x & -x;
    if (x & (2 * b)) return x - b;  // right child of x - b
    return x + b <= m ? x + b : x - b;  // left child of x + b, or x + b is past m and x - b's right child is pulled in
  }

  //! The step loop shared by allreduce, reduce and broadcast (see the file comment for the stamps).
  template <class Ctx>
  static void run(Ctx& c, const std::array<lane, 2>& lanes, int root, mode m, bool acc_in_scratch, const void* in_,
                  void* out_, std::size_t count, dtype t, op o) {
    using request = typename Ctx::request;
    const int n = c.size();
    const std::size_t esz = size_of(t);
    const auto* in = static_cast<const std::byte*>(in_);
    auto* out = static_cast<std::byte*>(out_);
    const auto real = [&](int v) { return (v + root) % n; };
    const std::size_t chunk = chunk_elems(c.chunk_bytes(), esz);

    // Tree 0 carries the first half, tree 1 the rest; the cut is kept on a cache line.
    const std::size_t line = 64 / esz;
    std::size_t half = (count + 1) / 2;
    half = std::min(count, (half + line - 1) / line * line);
    const std::array<std::size_t, 2> first = {0, half};
    const std::array<std::size_t, 2> length = {half, count - half};
    const std::array<std::size_t, 2> chunks = {(length[0] + chunk - 1) / chunk, (length[1] + chunk - 1) / chunk};
    const auto offset = [&](std::size_t w, std::size_t k) { return (first[w] + k * chunk) * esz; };
    const auto bytes = [&](std::size_t w, std::size_t k) { return std::min(chunk, length[w] - k * chunk) * esz; };

    // Scratch: two child slots (used within one phase) and, when partial sums may not go to out,
    // a window of them per tree.
    const std::size_t slot = chunk * esz;
    std::byte* scratch = c.scratch((2 + (acc_in_scratch ? 2 * window : 0)) * slot);
    const std::array<std::byte*, 2> from_child = {scratch, scratch + slot};
    const auto acc = [&](std::size_t w, std::size_t k) {
      return acc_in_scratch ? scratch + (2 + w * window + k % window) * slot : out + offset(w, k);
    };

    struct lane_requests {
      std::array<request, window> up{};                    //!< partial sum of chunk up_chunk[i] to the parent
      std::array<std::size_t, window> up_chunk{};
      std::array<std::array<request, 2>, window> down{};  //!< chunk k to the down children, at k % window
      request from_parent{};                               //!< the next chunk from the down parent
    };
    std::array<lane_requests, 2> rq{};
    for (auto& r : rq) r.up_chunk.fill(static_cast<std::size_t>(-1));

    // Step s: U phase on chunk s, D phase forwards chunk s - depth; the last step ends the deepest.
    std::ptrdiff_t steps = 0;
    for (std::size_t w = 0; w < 2; ++w) {
      if (!chunks[w]) continue;
      const auto k = static_cast<std::ptrdiff_t>(chunks[w]);
      if (lanes[w].reduces) steps = std::max(steps, k);
      if (lanes[w].distributes) steps = std::max(steps, k + lanes[w].down_depth);
    }

    for (std::ptrdiff_t s = 0; s < steps; ++s) {
      for (std::size_t w = 0; w < 2; ++w) {  // U: reduce chunk s up tree w
        const lane& l = lanes[w];
        auto& r = rq[w];
        const auto k = static_cast<std::size_t>(s);
        if (!l.reduces || k >= chunks[w]) continue;
        const std::size_t len = bytes(w, k), elems = len / esz;
        const std::byte* mine = in + offset(w, k);
        const std::byte* result = mine;  // a leaf passes its input on as it is
        if (l.up_children[0] >= 0) {
          std::byte* target = acc(w, k);
          if (acc_in_scratch) {  // the slot's previous chunk must have left
            c.wait(r.up[k % window]);
            for (auto& d : r.down[k % window]) c.wait(d);
          }
          std::array<request, 2> got{};
          for (std::size_t i = 0; i < 2; ++i)
            if (l.up_children[i] >= 0) got[i] = c.recv(real(l.up_children[i]), from_child[i], len);
          c.wait(got[0]);
          tutti::reduce(t, o, target, mine, from_child[0], elems);
          if (l.up_children[1] >= 0) {
            c.wait(got[1]);
            tutti::reduce(t, o, target, target, from_child[1], elems);
          }
          result = target;
        }
        if (l.up_parent >= 0) {
          c.wait(r.up[k % window]);
          r.up[k % window] = c.send(real(l.up_parent), result, len);
          r.up_chunk[k % window] = k;
        } else if (o == op::avg) {
          finish_avg(t, acc(w, k), elems, n);  // the root always has children: result is acc
        }
      }
      for (std::size_t w = 0; w < 2; ++w) {  // D: forward chunk s - depth down tree w
        const lane& l = lanes[w];
        auto& r = rq[w];
        if (!l.distributes) continue;
        const std::ptrdiff_t j = s - l.down_depth;
        if (j >= 0 && static_cast<std::size_t>(j) < chunks[w]) {
          const auto k = static_cast<std::size_t>(j);
          const std::byte* from;
          if (l.down_parent >= 0) {
            c.wait(r.from_parent);  // posted at the previous step
            from = out + offset(w, k);
          } else {
            from = m == mode::broadcast ? in + offset(w, k) : acc(w, k);
          }
          for (std::size_t i = 0; i < 2; ++i) {
            if (l.down_children[i] < 0) continue;
            c.wait(r.down[k % window][i]);
            r.down[k % window][i] = c.send(real(l.down_children[i]), from, bytes(w, k));
          }
        }
        // Post the receive of the chunk the parent sends at this same stamp (forwarded next step).
        const std::ptrdiff_t next = j + 1;
        if (l.down_parent >= 0 && next >= 0 && static_cast<std::size_t>(next) < chunks[w]) {
          const auto k = static_cast<std::size_t>(next);
          if (r.up_chunk[k % window] == k) c.wait(r.up[k % window]);  // it may have been sent from there
          r.from_parent = c.recv(real(l.down_parent), out + offset(w, k), bytes(w, k));
        }
      }
    }
    for (auto& r : rq) {
      for (auto& q : r.up) c.wait(q);
      for (auto& d : r.down)
        for (auto& q : d) c.wait(q);
      c.wait(r.from_parent);
    }
  }
};

}  // namespace tutti::algorithm

// Named in the communicator's refusals where it has the collective (core/listed.hpp).
TUTTI_LIST_ALGORITHM_AT(3, "", tutti::algorithm::tree);
