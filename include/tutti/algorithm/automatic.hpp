//! @file automatic.hpp  algorithm::automatic — the best built algorithm for the transport:
//! `direct` on a one-sided transport (shm), `ring` on any other two-sided one, and on a transport
//! that spans nodes (transport::node_aware) `hierarchical<direct, ring>` — direct through shared
//! memory inside each node, ring across — when every node holds the same number (> 1) of ranks,
//! else the flat ring (decided at run time from the node map, identically on every rank).
//!
//! Over a two-sided transport the ranks' arguments are checked in algorithm::eager's frames (its
//! agree()), not in a round of the communicator's, and a call small enough to ride in those frames
//! (eager::finishes: up to 16 KiB a frame, 64 KiB on 2 ranks) finishes there: log2(n) message latencies, instead of
//! the check's plus the schedule's 2(n - 1).
//!
//! A stand-in until `tuned<...>` chooses by measurement: on one host, direct beat ring at every
//! size measured (bench/results/, docs/tuning.md); across hosts, hierarchical sends each byte over
//! the network once per node instead of once per rank (bench/results/ for the namespace runs).
#pragma once
#include <string>
#include <string_view>
#include <type_traits>

#include "tutti/algorithm/direct.hpp"
#include "tutti/algorithm/eager.hpp"
#include "tutti/algorithm/hierarchical.hpp"
#include "tutti/algorithm/ring.hpp"
#include "tutti/core/listed.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/transport/group.hpp"

namespace tutti::algorithm {

struct automatic {
  using tutti_role = role::algorithm;
  static constexpr std::string_view name = "automatic";
  //! Every algorithm it picks carries lossy codecs.
  static constexpr bool carries_lossy_codecs = true;

  //! The flat algorithm this picks for a transport that does not span nodes.
  template <class Transport>
  using flat_for = std::conditional_t<one_sided_transport<Transport>, direct, ring>;
  //! What runs inside each node of a node-aware transport: direct when its node transport is one-sided.
  template <class Transport>
  using across_nodes_for = hierarchical<flat_for<typename transport::node_level<Transport>::type>, ring>;
  template <class Transport>
  static constexpr bool spans_nodes = transport::node_level<Transport>::separate;

  //! The algorithm this picks for a transport (for a node-aware one: when its nodes are even).
  template <class Transport>
  using for_transport = std::conditional_t<spans_nodes<Transport>, across_nodes_for<Transport>, flat_for<Transport>>;

  //! The name of what run() picks over Transport when every node holds `ranks_per_node` ranks (0:
  //! the nodes differ): the default candidate of tuned<...>'s fallback and of tutti-tune's rule.
  template <class Transport>
  [[nodiscard]] static constexpr std::string_view choice_name(int ranks_per_node) noexcept {
    if constexpr (spans_nodes<Transport>) return ranks_per_node > 1 ? across_nodes_for<Transport>::name : ring::name;
    else return flat_for<Transport>::name;
  }

  //! What this picks over `t`, for the communicator's info line: "hierarchical<direct, ring>",
  //! "direct", or the flat ring with the reason when a node-aware transport's nodes are uneven.
  template <class Transport>
  [[nodiscard]] static std::string resolved(const Transport& t) {
    if constexpr (spans_nodes<Transport>) {
      const std::string hierarchical(across_nodes_for<Transport>::name);
      if constexpr (requires { t.nodes().even(); }) {
        if (!t.nodes().even()) return "ring: the nodes hold different numbers of ranks";
        if (t.nodes().nodes() == t.world_size()) return "ring: one rank per node";
        return hierarchical;
      } else {
        return hierarchical + " on even nodes of several ranks, else ring";
      }
    } else {
      return std::string(flat_for<Transport>::name);
    }
  }

  //! Whether the check rides in eager's frames: any two-sided transport of host memory.
  template <class Transport>
  static constexpr bool checks_in_frames = !one_sided_transport<Transport> && !Transport::traits.device_memory;
  //! In direct's first epoch on a one-sided transport, in eager's frames on any other host transport.
  template <class Transport>
  static constexpr bool checks_arguments = one_sided_transport<Transport> || checks_in_frames<Transport>;

  template <class Ctx>
  static void agree(Ctx& c) {
    if constexpr (one_sided_transport<typename Ctx::transport_type>) direct::agree(c);
    else eager::agree(c);
  }
  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    run(c, count * size_of(t), [&](auto a) { decltype(a)::allreduce(c, in, out, count, t, o); });
  }
  template <class Ctx>
  static void reduce_scatter(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    run(c, count * size_of(t), [&](auto a) { decltype(a)::reduce_scatter(c, in, out, count, t, o); });
  }
  template <class Ctx>
  static void allgather(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    run(c, static_cast<std::size_t>(c.size()) * count * size_of(t), [&](auto a) { decltype(a)::allgather(c, in, out, count, t); });
  }
  template <class Ctx>
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t count, dtype t, int root) {
    run(c, count * size_of(t), [&](auto a) { decltype(a)::broadcast(c, in, out, count, t, root); });
  }
  template <class Ctx>
  static void reduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, int root) {
    run(c, count * size_of(t), [&](auto a) { decltype(a)::reduce(c, in, out, count, t, o, root); });
  }
  template <class Ctx>
  static void alltoall(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    run(c, count * size_of(t), [&](auto a) { decltype(a)::alltoall(c, in, out, count, t); });
  }
  template <class Ctx>
  static void barrier(Ctx& c) {
    run(c, 0, [&](auto a) { decltype(a)::barrier(c); });
  }

 private:
  //! Calls f with an object whose type names the algorithm to run (`decltype(a)::allreduce(...)`).
  //! Over a two-sided host transport: eager when it finishes the call in its frames (the most one
  //! frame must carry, `frame_bytes`, fits: eager::finishes; the codec is lossless), else eager's
  //! check first, then the schedule.
  template <class Ctx, class F>
  static void run(Ctx& c, std::size_t frame_bytes, F&& f) {
    using T = typename Ctx::transport_type;
    if constexpr (checks_in_frames<T>) {
      if (Ctx::lossless && eager::finishes(c.size(), frame_bytes)) return f(eager{});
      eager::check_first(c);
    }
    if constexpr (spans_nodes<T>) {
      // One rank per node: hierarchical's node level would only copy (its allgather 3 passes over
      // the output), and what it runs across nodes is this same ring.
      if (c.nodes().even() && c.nodes().nodes() < c.size()) return f(across_nodes_for<T>{});
      return f(ring{});
    } else {
      return f(flat_for<T>{});
    }
  }
};

}  // namespace tutti::algorithm

// Named in the communicator's refusals where it has the collective (core/listed.hpp).
TUTTI_LIST_ALGORITHM_AT(6, "", tutti::algorithm::automatic);
