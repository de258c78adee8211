//! @file hierarchical.hpp  algorithm::hierarchical<Intra, Inter> — two levels: inside each node,
//! then across nodes among the ranks with the same local index.
//!
//! allreduce (Intra can reduce-scatter): reduce-scatter inside the node, so local rank l holds the
//! node's sum of segment l; allreduce segment l across nodes with the other nodes' local rank l
//! (L such allreduces run at once, each over 1/L of the data, using every rank's network link);
//! allgather inside the node. Each byte crosses the network once per node instead of once per
//! rank. With an Intra that cannot reduce-scatter (tree): reduce to local rank 0, allreduce among
//! local ranks 0, broadcast inside the node. Pipelined where the transport's network level is a
//! separate object (node_aware, multi_node): the body goes in chunks of L * TUTTI_CHUNK_BYTES,
//! chunk j's network level on a worker thread while this thread reduce-scatters chunk j + 1 and
//! allgathers chunk j - 1 inside the node (pipelined() below).
//! reduce_scatter and allgather are the same two levels (blocks permuted through scratch so each
//! level sees contiguous blocks), except allgather on nodes of consecutive ranks: inside the node,
//! across nodes among local ranks 0 (pipelined as allreduce: pipelined_allgather()), a broadcast
//! inside the node, all in place; broadcast and reduce go through the root's local index on every
//! node; barrier is Intra's then Inter's; alltoall is the flat pairwise exchange.
//!
//! Nodes come from the communicator's node map (context::nodes(), algorithm/node_map.hpp): a
//! node-aware transport's bootstrap built it; otherwise the transport's node_id() (rank_info::node_id:
//! hostname + boot id, or TUTTI_NODE_ID) was exchanged when the communicator was made. Every node
//! must hold the same number of ranks; otherwise every rank gets the same tutti::invalid_argument
//! naming the nodes.
//! Intra and Inter get sub-contexts (context::sub): the same call, tag, deadline and tuning, their
//! own scratch and state, and the part of the node map their group spans, so either may itself be
//! a composition (hierarchical<hierarchical<direct, ring>, ring>) or a stateful algorithm.
//! Intra and Inter run over transport::group views. Intra's is one-sided when the transport is
//! (so hierarchical<direct, ring> reads node peers' memory directly); Inter's is always two-sided,
//! so a one-sided Inter (direct) is a compile-time error (see transport/group.hpp for why).
//! Sub-collectives always use sum for avg; the result is divided once at the end, as the flat
//! algorithms do.
//! Lossy codecs (carried when Inter carries them) apply to the inter-node level only: Intra's
//! reduce-scatter and allgather move exact fp32 through shared memory, where bandwidth is plenty
//! and a quantisation would only add error, and each element is quantised twice in all, on the
//! network. For avg, every contribution is scaled by 1/world before it is encoded (the context's
//! prescale), so fp16 cannot overflow on the sum. This is the only arrangement built: compressing
//! inside a node too would add two quantisations to save bytes on the fastest link.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tutti/algorithm/alltoall.hpp"
#include "tutti/algorithm/composed_name.hpp"
#include "tutti/algorithm/compressed.hpp"
#include "tutti/algorithm/concepts.hpp"
#include "tutti/algorithm/context.hpp"
#include "tutti/algorithm/node_map.hpp"
#include "tutti/algorithm/ring.hpp"
#include "tutti/algorithm/split.hpp"
#include "tutti/bootstrap/node.hpp"
#include "tutti/core/background_worker.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/listed.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/core/reduce.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/transport/group.hpp"

namespace tutti::algorithm {

inline constexpr std::string_view hierarchical_name = "hierarchical";

//! What hierarchical's pipelined allreduce keeps where the transport's network level is a separate
//! object: Inter's group over that level, its slot, and the thread that drives it.
template <class T, bool = transport::network_level<T>::separate>
struct pipeline_part {};
template <class T>
struct pipeline_part<T, true> {
  transport::group<typename transport::network_level<T>::type> inter;
  sub_slot slot;
  background_worker worker{"tutti-inter"};
};

template <class Intra, class Inter>
struct hierarchical {
  static_assert(algorithm_policy<Intra>, "tutti::algorithm::hierarchical<Intra, Inter>: Intra is not a tutti Algorithm");
  static_assert(algorithm_policy<Inter>, "tutti::algorithm::hierarchical<Intra, Inter>: Inter is not a tutti Algorithm");
  static_assert(!requires { requires Inter::needs_one_sided; },
                "tutti::algorithm::hierarchical<Intra, Inter>: Inter runs on a two-sided group view, so it cannot be a "
                "one-sided algorithm such as direct (Intra can); use ring, tree or halving_doubling across nodes");
  using tutti_role = role::algorithm;
  //! Names its parts: "hierarchical<direct, ring>" (log lines, error messages).
  static constexpr std::string_view name = composed_name<hierarchical_name, Intra, Inter>;
  using intra_algorithm = Intra;
  //! Carries lossy codecs when its inter-node algorithm does (they apply across nodes only).
  static constexpr bool carries_lossy_codecs = lossy_codec_carrier<Inter>;
  using inter_algorithm = Inter;

  //! Intra's view of its node: a group of the node-level transport (a node-aware transport's own
  //! intra-node part, else the transport itself), one-sided when that is (so `direct` can be Intra).
  template <class T>
  using node_transport = typename transport::node_level<T>::type;
  template <class T>
  using intra_group = std::conditional_t<one_sided_transport<node_transport<T>>,
                                         transport::one_sided_group<node_transport<T>>,
                                         transport::group<node_transport<T>>>;
  //! The contexts Intra and Inter see: group views of the communicator's transport. Inter's is
  //! always two-sided: only one group per rank may use the one-sided machinery (group.hpp).
  template <class Ctx>
  using intra_context = context<intra_group<typename Ctx::transport_type>>;
  template <class Ctx>
  using inter_context = context<transport::group<typename Ctx::transport_type>, typename Ctx::codec_type>;

  template <class Ctx>
    requires has_allreduce<Inter, inter_context<Ctx>> &&
             ((has_reduce_scatter<Intra, intra_context<Ctx>> && has_allgather<Intra, intra_context<Ctx>> &&
               has_allreduce<Intra, intra_context<Ctx>>) ||
              (has_reduce<Intra, intra_context<Ctx>> && has_broadcast<Intra, intra_context<Ctx>>))
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    auto& s = setup(c);
    auto ic = s.intra_context(c), xc = s.inter_context(c);
    const std::size_t esz = size_of(t);
    const op inner = o == op::avg ? op::sum : o;
    if constexpr (!Ctx::lossless) {
      check_lossy_arguments(c, t, o);
      xc.set_prescale(c.prescale() * (o == op::avg ? 1.0f / static_cast<float>(c.size()) : 1.0f));
    }
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    if (count == 0) return;
    if constexpr (has_reduce_scatter<Intra, intra_context<Ctx>> && has_allgather<Intra, intra_context<Ctx>>) {
      const auto L = static_cast<std::size_t>(s.grid.local_size), l = static_cast<std::size_t>(s.grid.local_rank);
      // A lossy codec's blocks must start at the same element on every rank and level: cut at
      // multiples of its granule (int8: 256), the rest goes whole through both levels as the tail.
      const std::size_t g = decltype(xc)::granule;
      const std::size_t block = count / L / g * g, body = block * L, tail = count - body;
      if (block && !pipelined(c, s, ic, xc.prescale(), src, dst, block, t, inner)) {
        std::byte* mine = dst + l * block * esz;  // the in-place layouts of reduce_scatter and allgather
        c.phase("INTRA_REDUCE_SCATTER");
        Intra::reduce_scatter(ic, src, mine, block, t, inner);
        if constexpr (!Ctx::lossless) xc.set_residual(c.residual() ? c.residual() + l * block : nullptr);
        c.phase("INTER_ALLREDUCE");
        Inter::allreduce(xc, mine, mine, block, t, inner);
        c.phase("INTRA_ALLGATHER");
        Intra::allgather(ic, mine, dst, block, t);
      }
      if (tail) {  // fewer than L (granules) left: both levels reduce them whole
        c.phase("TAIL");
        Intra::allreduce(ic, src + body * esz, dst + body * esz, tail, t, inner);
        if constexpr (feedback_codec_policy<typename Ctx::codec_type>) {
          // Every inter group would encode the same node sum, each keeping its own copy of the
          // same residual: what is not sent yet must live on one rank per node. Local rank 0's
          // group sends the tail and the node's other ranks get it from there.
          static_assert(has_broadcast<Intra, intra_context<Ctx>>,
                        "tutti::algorithm::hierarchical<Intra, Inter>: with an error-feedback codec, Intra needs broadcast");
          if (l == 0) {
            xc.set_residual(c.residual() ? c.residual() + body : nullptr);
            Inter::allreduce(xc, dst + body * esz, dst + body * esz, tail, t, inner);
          }
          Intra::broadcast(ic, dst + body * esz, dst + body * esz, tail, t, 0);
        } else {
          Inter::allreduce(xc, dst + body * esz, dst + body * esz, tail, t, inner);
        }
      }
    } else {
      const bool leader = s.grid.local_rank == 0;
      c.phase("INTRA_REDUCE");
      Intra::reduce(ic, src, leader ? dst : nullptr, count, t, inner, 0);
      if constexpr (!Ctx::lossless) xc.set_residual(c.residual());
      c.phase("INTER_ALLREDUCE");
      if (leader) Inter::allreduce(xc, dst, dst, count, t, inner);
      c.phase("INTRA_BROADCAST");
      Intra::broadcast(ic, dst, dst, count, t, 0);
    }
    if (o == op::avg && Ctx::lossless) finish_avg(t, dst, count, c.size());
  }

  //! in: count * n blocks (block q for rank q); out: this rank's `count`.
  template <class Ctx>
    requires has_reduce_scatter<Intra, intra_context<Ctx>> && has_reduce_scatter<Inter, inter_context<Ctx>>
  static void reduce_scatter(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    auto& s = setup(c);
    auto ic = s.intra_context(c), xc = s.inter_context(c);
    if (count == 0) return;
    const auto& g = s.grid;
    const std::size_t esz = size_of(t), bytes = count * esz, N = static_cast<std::size_t>(g.nodes);
    const std::size_t world = static_cast<std::size_t>(c.size());
    // Local index j's share, node by node, so the node-level reduce-scatter hands local rank j
    // the blocks of every node's rank j, which the node-level reduce-scatter across nodes splits.
    std::byte* ordered = c.scratch((world + N) * bytes);
    std::byte* partial = ordered + world * bytes;
    for (int j = 0; j < g.local_size; ++j)
      for (int k = 0; k < g.nodes; ++k)
        std::memcpy(ordered + (static_cast<std::size_t>(j) * N + static_cast<std::size_t>(k)) * bytes,
                    static_cast<const std::byte*>(in) + static_cast<std::size_t>(g.at(k, j)) * bytes, bytes);
    const op inner = o == op::avg ? op::sum : o;
    Intra::reduce_scatter(ic, ordered, partial, N * count, t, inner);
    Inter::reduce_scatter(xc, partial, out, count, t, inner);
    if (o == op::avg) finish_avg(t, out, count, c.size());
  }

  //! in: count; out: count * n, rank q's block at q * count.
  template <class Ctx>
    requires has_allgather<Intra, intra_context<Ctx>> && has_allgather<Inter, inter_context<Ctx>>
  static void allgather(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    auto& s = setup(c);
    auto ic = s.intra_context(c), xc = s.inter_context(c);
    if (count == 0) return;
    const auto& g = s.grid;
    const std::size_t esz = size_of(t), bytes = count * esz, N = static_cast<std::size_t>(g.nodes);
    if (g.consecutive()) {
      // Node k's blocks are out's range [k L, (k + 1) L) blocks: gather it inside the node, the
      // nodes' ranges across them (local index 0 of each node: each byte crosses once per node),
      // then the other nodes' ranges inside the node from local index 0. Everything is written
      // where it belongs: no pass over the output to put the blocks in rank order.
      const std::size_t L = static_cast<std::size_t>(g.local_size), node_bytes = L * bytes;
      auto* dst = static_cast<std::byte*>(out);
      std::byte* mine = dst + static_cast<std::size_t>(g.node) * node_bytes;
      Intra::allgather(ic, in, mine, count, t);  // in place when `in` is this rank's block of out
      if (pipelined_allgather(c, s, ic, dst, L * count, t)) return;
      if (g.local_rank == 0) Inter::allgather(xc, mine, dst, L * count, t);
      if (L == 1) return;
      const std::size_t before = static_cast<std::size_t>(g.node) * node_bytes, after = N * node_bytes - before - node_bytes;
      if (before) Intra::broadcast(ic, dst, dst, before / esz, t, 0);
      if (after) Intra::broadcast(ic, mine + node_bytes, mine + node_bytes, after / esz, t, 0);
      return;
    }
    std::byte* across = c.scratch((N + static_cast<std::size_t>(c.size())) * bytes);
    std::byte* gathered = across + N * bytes;  // by local index, then node
    Inter::allgather(xc, in, across, count, t);  // reads `in` before `out` is written (in place)
    Intra::allgather(ic, across, gathered, N * count, t);
    for (int j = 0; j < g.local_size; ++j)
      for (int k = 0; k < g.nodes; ++k)
        std::memcpy(static_cast<std::byte*>(out) + static_cast<std::size_t>(g.at(k, j)) * bytes,
                    gathered + (static_cast<std::size_t>(j) * N + static_cast<std::size_t>(k)) * bytes, bytes);
  }

  //! Across nodes among the root's local index, then inside every node from that rank.
  template <class Ctx>
    requires has_broadcast<Intra, intra_context<Ctx>> && has_broadcast<Inter, inter_context<Ctx>>
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t count, dtype t, int root) {
    auto& s = setup(c);
    auto ic = s.intra_context(c), xc = s.inter_context(c);
    const auto [root_node, root_local] = s.place(root);
    if (s.grid.local_rank == root_local) Inter::broadcast(xc, c.rank() == root ? in : out, out, count, t, root_node);
    Intra::broadcast(ic, out, out, count, t, root_local);
  }

  //! Inside every node to the root's local index, then across nodes among those ranks to root.
  template <class Ctx>
    requires has_reduce<Intra, intra_context<Ctx>> && has_reduce<Inter, inter_context<Ctx>>
  static void reduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, int root) {
    auto& s = setup(c);
    auto ic = s.intra_context(c), xc = s.inter_context(c);
    if (count == 0) return;
    const auto [root_node, root_local] = s.place(root);
    const bool relay = s.grid.local_rank == root_local, is_root = c.rank() == root;
    const op inner = o == op::avg ? op::sum : o;
    std::byte* node_sum = !relay ? nullptr : is_root ? static_cast<std::byte*>(out) : c.scratch(count * size_of(t));
    Intra::reduce(ic, in, node_sum, count, t, inner, root_local);
    if (relay) Inter::reduce(xc, node_sum, is_root ? out : nullptr, count, t, inner, root_node);
    if (is_root && o == op::avg) finish_avg(t, out, count, c.size());
  }

  //! Everyone on my node entered; then every node's rank with my local index passed that point.
  template <class Ctx>
    requires has_barrier<Intra, intra_context<Ctx>> && has_barrier<Inter, inter_context<Ctx>>
  static void barrier(Ctx& c) {
    auto& s = setup(c);
    auto ic = s.intra_context(c), xc = s.inter_context(c);
    Intra::barrier(ic);
    Inter::barrier(xc);
  }

  //! No aggregation across the node boundary yet: the flat pairwise exchange.
  template <class Ctx>
  static void alltoall(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    setup(c);  // the node check still applies: one verdict for every collective
    pairwise_alltoall(c, in, out, count, t);
  }

  //! The node grid, the two group transports and their slots, made on this algorithm's first collective.
  template <class Transport>
  struct state {
    node_grid grid;
    std::string refusal;  //!< why this job cannot be arranged in nodes (empty: it can)
    intra_group<Transport> intra;
    transport::group<Transport> inter;
    sub_slot intra_slot, inter_slot;  //!< each level's scratch, state and node map
    std::unique_ptr<pipeline_part<Transport>> pipe;  //!< where the network level is separate: the pipeline's

    //! Intra's elements travel exact (codec::none); Inter's as the communicator's codec says.
    template <class Ctx>
    context<intra_group<Transport>> intra_context(Ctx& c) {
      return c.template sub<codec::none>(intra, intra_slot);
    }
    template <class Ctx>
    context<transport::group<Transport>, typename Ctx::codec_type> inter_context(Ctx& c) {
      return c.sub(inter, inter_slot);
    }
    //! Node and local index of global rank r.
    [[nodiscard]] std::pair<int, int> place(int r) const {
      for (int k = 0; k < grid.nodes; ++k)
        for (int l = 0; l < grid.local_size; ++l)
          if (grid.at(k, l) == r) return {k, l};
      return {0, 0};
    }
  };

 private:
  //! The pipelines' schedule (allreduce's and allgather's): for each chunk j, `node_first(j)` on this
  //! thread, then the task `network(j)` returns posted to the worker, then `node_then(j - 1)` here
  //! once the worker has finished chunk j - 1; `node_then` of the last chunk at the end. A failure on
  //! either thread leaves only once no task uses the buffers any more.
  template <class First, class Network, class Then>
  static void overlap_chunks(background_worker& worker, std::size_t chunks, First&& node_first, Network&& network,
                             Then&& node_then) {
    worker.reset();
    const background_worker::drain_guard drained(worker);
    std::uint64_t previous = 0;
    for (std::size_t j = 0; j < chunks; ++j) {
      node_first(j);
      const std::uint64_t ticket = worker.post(network(j));
      if (j > 0) {
        worker.wait(previous);
        node_then(j - 1);
      }
      previous = ticket;
    }
    worker.wait(previous);
    node_then(chunks - 1);
  }

  //! allgather's link phase in chunks (nodes of consecutive ranks, after the node's own range is
  //! gathered in place): local rank 0's worker thread runs ring's round j among the local ranks 0
  //! (chunk j of every node's range, over the transport's network part) while every local rank
  //! broadcasts chunk j - 1 of the other nodes' ranges inside the node from local rank 0, so the
  //! node's copies run under the link's time. Where Inter is ring (its rounds are the chunks), the
  //! network level is separate and nodes hold several ranks; false otherwise or for one chunk.
  template <class Ctx, class S, class IC>
  static bool pipelined_allgather(Ctx& c, S& s, IC& ic, std::byte* dst, std::size_t node_count, dtype t) {
    if constexpr (!transport::network_level<typename Ctx::transport_type>::separate || !std::is_same_v<Inter, ring>) {
      return false;
    } else {
      const int nodes = s.grid.nodes;
      const std::size_t esz = size_of(t), chunk = chunk_elems(c.chunk_bytes(), esz);
      const split sp{node_count * static_cast<std::size_t>(nodes), static_cast<std::size_t>(nodes)};
      const std::size_t rounds = sp.rounds(chunk);
      if (rounds <= 1 || s.grid.local_size == 1) return false;
      const auto share = [&](std::size_t j) {  // chunk j of the other nodes' ranges, from local rank 0
        for (int k = 0; k < nodes; ++k)
          if (const auto r = sp.chunk(static_cast<std::size_t>(k), j, chunk); k != s.grid.node && r.count)
            Intra::broadcast(ic, dst + r.first * esz, dst + r.first * esz, r.count, t, 0);
      };
      c.phase("PIPELINE");
      for (std::size_t j = 0; s.grid.local_rank != 0 && j < rounds; ++j) share(j);
      if (s.grid.local_rank != 0) return true;
      auto& p = *s.pipe;
      auto xc = c.sub(p.inter, p.slot);
      overlap_chunks(
          p.worker, rounds, [](std::size_t) {},
          [&](std::size_t j) {
            return [xc, sp, j, chunk, esz, dst]() mutable { ring::allgather_round(xc, sp, j, chunk, esz, dst); };
          },
          share);
      return true;
    }
  }

  //! allreduce's body in chunks of L pieces of TUTTI_CHUNK_BYTES (context::chunk_bytes; a multiple
  //! of the codec's granule): while the state's worker thread runs chunk j's network level (Inter
  //! over the transport's network part), this thread reduce-scatters chunk j + 1 and allgathers
  //! chunk j - 1 inside the node (Intra over the node part), so the node's copies run under the
  //! link's time instead of before and after it. Every rank cuts the same chunks and runs each
  //! level's sub-collectives in the same order, each level on its own thread: no tag or buffer is
  //! shared between the two. Returns false where it does not apply: a transport whose network level
  //! is not a separate object (group.hpp's network_level), or a body of one chunk.
  template <class Ctx, class S, class IC>
  static bool pipelined(Ctx& c, S& s, IC& ic, float prescale, const std::byte* src, std::byte* dst, std::size_t block,
                        dtype t, op inner) {
    if constexpr (!transport::network_level<typename Ctx::transport_type>::separate) {
      return false;
    } else {
      const std::size_t esz = size_of(t), g = Ctx::granule;
      const std::size_t piece = std::max(g, c.chunk_bytes() / esz / g * g);  // elements per local rank per chunk
      if (block <= piece) return false;
      auto& p = *s.pipe;
      const auto L = static_cast<std::size_t>(s.grid.local_size), l = static_cast<std::size_t>(s.grid.local_rank);
      const std::size_t chunks = (block + piece - 1) / piece;
      const auto first = [&](std::size_t j) { return j * piece * L; };  // chunk j's first element
      const auto length = [&](std::size_t j) { return std::min(piece, block - j * piece); };  // per local rank
      const auto mine = [&](std::size_t j) { return dst + (first(j) + l * length(j)) * esz; };
      c.phase("PIPELINE");
      overlap_chunks(
          p.worker, chunks,
          [&](std::size_t j) { Intra::reduce_scatter(ic, src + first(j) * esz, mine(j), length(j), t, inner); },
          [&](std::size_t j) {
            auto xc = c.sub(p.inter, p.slot);
            if constexpr (!Ctx::lossless) {
              xc.set_prescale(prescale);
              xc.set_residual(c.residual() ? c.residual() + first(j) + l * length(j) : nullptr);
            }
            return [xc, data = mine(j), n = length(j), t, inner]() mutable { Inter::allreduce(xc, data, data, n, t, inner); };
          },
          [&](std::size_t j) { Intra::allgather(ic, mine(j), dst + first(j) * esz, length(j), t); });
      return true;
    }
  }

  //! First call: the node grid from the context's node map (the communicator's, or the part of it
  //! a parent composition's group spans), the two groups, and each group's part of the map.
  template <class Ctx>
  static auto& setup(Ctx& c) {
    using T = typename Ctx::transport_type;
    auto& s = c.template state<state<T>>([] { return std::make_shared<state<T>>(); });
    if (s.intra.world_size() == 0 && s.refusal.empty()) {
      try {
        const node_map& nodes = c.nodes();
        s.grid = node_grid::from_map(nodes, c.rank());
        std::vector<int> node_members = s.grid.intra;  // global ranks; a separate node transport numbers them locally
        if constexpr (transport::node_level<T>::separate)
          for (int l = 0; l < s.grid.local_size; ++l) node_members[static_cast<std::size_t>(l)] = l;
        s.intra = intra_group<T>(transport::node_level<T>::of(c.transport()), std::move(node_members));
        if constexpr (transport::node_level<T>::separate) s.intra.name_parent_ranks(s.grid.intra);
        s.inter = transport::group<T>(c.transport(), s.grid.inter);
        s.intra_slot.nodes = part_of(nodes, s.grid.intra);
        s.inter_slot.nodes = part_of(nodes, s.grid.inter);
        if constexpr (transport::network_level<T>::separate) {
          s.pipe = std::make_unique<pipeline_part<T>>();
          s.pipe->inter = transport::group<typename transport::network_level<T>::type>(
              transport::network_level<T>::of(c.transport()), s.grid.inter);
          s.pipe->slot.nodes = s.inter_slot.nodes;
        }
      } catch (const invalid_argument& e) {
        s.refusal = e.what();
      }
    }
    if (!s.refusal.empty())
      throw invalid_argument(c.where() + "algorithm::hierarchical: " + s.refusal);
    return s;
  }
};

}  // namespace tutti::algorithm

// Named in the communicator's refusals where it has the collective (core/listed.hpp).
TUTTI_LIST_ALGORITHM_AT(5, "hierarchical<I, X> (when both have it)",
                        tutti::algorithm::hierarchical<tutti::any_algorithm, tutti::any_algorithm>);
