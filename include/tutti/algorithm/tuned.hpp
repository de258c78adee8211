//! @file tuned.hpp  algorithm::tuned<A...> — each call runs the candidate that a measured tuning
//! table chose for its collective, size, element class and this communicator's layout.
//!
//! The table is TUTTI_TUNING_FILE, else the default shipped with tutti (tuned/table_source.hpp).
//! When the communicator is made (prepare, algorithm/concepts.hpp) every rank reads it, checks that
//! every other rank read the same one (a hash), and compiles it for the layout it is in: world,
//! nodes, ranks per node (tuner/selection.hpp). A call is then a binary search over a few ranges
//! and a switch over the candidates: no allocation, no virtual call, no string unless TUTTI_LOG=debug.
//! Each candidate keeps its own state (algorithm_state is keyed by type). docs/algorithms.md and
//! docs/tuning.md tell the rest.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "tutti/algorithm/automatic.hpp"
#include "tutti/algorithm/concepts.hpp"
#include "tutti/algorithm/ring.hpp"
#include "tutti/algorithm/tuned/agree_table.hpp"
#include "tutti/algorithm/tuned/control.hpp"
#include "tutti/algorithm/tuned/table_source.hpp"
#include "tutti/core/collective.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/listed.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/tuner/selection.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::algorithm {

namespace tuned_detail {
//! "tuned<ring, direct>", with static storage.
template <class... A>
struct name {
  static constexpr std::string_view open = "tuned<", separator = ", ", close = ">";
  static constexpr std::size_t size =
      open.size() + (std::string_view(A::name).size() + ...) + separator.size() * (sizeof...(A) - 1) + close.size();
  static constexpr std::array<char, size + 1> chars = [] {
    std::array<char, size + 1> out{};
    std::size_t at = 0, index = 0;
    const auto append = [&](std::string_view part) {
      for (char ch : part) out[at++] = ch;
    };
    append(open);
    ((append(index++ ? separator : std::string_view()), append(A::name)), ...);
    append(close);
    return out;
  }();
  static constexpr std::string_view value{chars.data(), size};
};

//! A candidate that reads peers' memory (needs_one_sided: direct) runs only over a one-sided
//! transport; over another it counts as having no collective at all.
template <class A, class Transport>
concept usable_over = !requires { requires A::needs_one_sided; } || one_sided_transport<Transport>;

template <collective C, class A, class Ctx>
inline constexpr bool runs = usable_over<A, typename Ctx::transport_type> && has_collective<C, A, Ctx>;

template <class A, class Transport>
inline constexpr bool checks = usable_over<A, Transport> && requires { requires A::template checks_arguments<Transport>; };

}  // namespace tuned_detail

template <algorithm_policy... A>
struct tuned {
  static_assert(sizeof...(A) > 0, "tutti::algorithm::tuned<A...> requires at least one candidate algorithm");
  using tutti_role = role::algorithm;
  static constexpr std::string_view name = tuned_detail::name<A...>::value;
  static constexpr std::size_t count = sizeof...(A);
  //! Its state on a communicator, and what comm.algorithm_control() returns.
  using control = tuned_control<A...>;
  template <std::size_t I>
  using candidate = std::tuple_element_t<I, std::tuple<A...>>;

  //! Only when every candidate does: any of them may run.
  static constexpr bool carries_lossy_codecs = (lossy_codec_carrier<A> && ...);
  static constexpr bool handles_device_memory = (device_memory_algorithm<A> && ...);

  //! The first candidate that checks arguments over Transport (direct over shm), or `count`.
  template <class Transport>
  static constexpr std::size_t checker = [] {
    constexpr std::array<bool, count> checks{tuned_detail::checks<A, Transport>...};
    for (std::size_t i = 0; i < count; ++i)
      if (checks[i]) return i;
    return count;
  }();
  //! With a checker, every call checks in it: the checker's collective carries the descriptor, and
  //! any other candidate runs after the checker's agree() (the same first synchronisation, so ranks
  //! that chose differently still meet in it and see the same mismatch).
  template <class Transport>
  static constexpr bool checks_arguments = checker<Transport> < count;
  template <class Ctx>
    requires checks_arguments<typename Ctx::transport_type>
  static void agree(Ctx& c) {
    candidate<checker<typename Ctx::transport_type>>::agree(c);
  }

  //! The candidates as a table may name them, with the collectives each has over Ctx's transport.
  template <class Ctx>
  static constexpr std::array<tuner::candidate_info, count> candidates_for() {
    return {info_of<A, Ctx>()...};
  }

  //! Once per communicator, collectively: the candidates' own prepare, then the table read,
  //! agreed across ranks and compiled for this layout into this communicator's control.
  template <class Ctx>
  static void prepare(Ctx& c) {
    (prepare_candidate<A>(c), ...);
    std::shared_ptr<const tuner::table> table;
    tuned_table::reading mine;
    bool built_in = false;
    try {
      table = tuned_table::load(c.rank(), name);
      built_in = table == tuned_table::built_in();
      mine = {tuned_table::hash_of(*table), table->source, {}};
    } catch (const invalid_argument& e) {
      mine.error = e.what();  // told to every rank in agree(), so none waits for this one
    }
    const unsigned cores = tuned_table::agree(c, name, mine);
    const std::uint64_t hash = mine.hash;
    const tuner::layout here = layout_of(c);
    control& made = c.template state<control>([&] {
      return std::make_shared<control>(std::move(table), hash, here, candidates_for<Ctx>(), fallback_for<Ctx>(here),
                                       cores, built_in);
    });
    if (log_enabled(log_level::info))
      log(log_level::info, c.rank(), std::string(name) + ": table " + made.table().source + " (hash " +
          tuner::hash_text(hash) + "): " + made.selection().how());
  }

  template <class Ctx>
    requires(tuned_detail::runs<collective::allreduce, A, Ctx> || ...)
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t n, dtype t, op o) {
    run<collective::allreduce>(c, in, out, n, t, o, 0);
  }
  template <class Ctx>
    requires(tuned_detail::runs<collective::reduce_scatter, A, Ctx> || ...)
  static void reduce_scatter(Ctx& c, const void* in, void* out, std::size_t n, dtype t, op o) {
    run<collective::reduce_scatter>(c, in, out, n, t, o, 0);
  }
  template <class Ctx>
    requires(tuned_detail::runs<collective::allgather, A, Ctx> || ...)
  static void allgather(Ctx& c, const void* in, void* out, std::size_t n, dtype t) {
    run<collective::allgather>(c, in, out, n, t, op::sum, 0);
  }
  template <class Ctx>
    requires(tuned_detail::runs<collective::broadcast, A, Ctx> || ...)
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t n, dtype t, int root) {
    run<collective::broadcast>(c, in, out, n, t, op::sum, root);
  }
  template <class Ctx>
    requires(tuned_detail::runs<collective::reduce, A, Ctx> || ...)
  static void reduce(Ctx& c, const void* in, void* out, std::size_t n, dtype t, op o, int root) {
    run<collective::reduce>(c, in, out, n, t, o, root);
  }
  template <class Ctx>
    requires(tuned_detail::runs<collective::alltoall, A, Ctx> || ...)
  static void alltoall(Ctx& c, const void* in, void* out, std::size_t n, dtype t) {
    run<collective::alltoall>(c, in, out, n, t, op::sum, 0);
  }
  template <class Ctx>
    requires(tuned_detail::runs<collective::barrier, A, Ctx> || ...)
  static void barrier(Ctx& c) {
    run<collective::barrier>(c, nullptr, nullptr, 0, dtype::u8, op::sum, 0);
  }

 private:
  template <class X, class Ctx>
  static constexpr tuner::candidate_info info_of() {
    tuner::candidate_info info{X::name, {}};
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((info.has[K] = tuned_detail::runs<static_cast<collective>(K), X, Ctx>), ...);
    }(std::make_index_sequence<tuner::collective_kinds>{});
    return info;
  }

  //! For each candidate, the one that runs collective C in its place: itself when it has C, else
  //! the first candidate that has it (a fallback or a forced candidate may lack C).
  template <collective C, class Ctx>
  static constexpr std::array<std::uint32_t, count> runner = [] {
    constexpr std::array<bool, count> has{tuned_detail::runs<C, A, Ctx>...};
    std::uint32_t first = 0;
    while (first < count && !has[first]) ++first;
    std::array<std::uint32_t, count> out{};
    for (std::uint32_t i = 0; i < count; ++i) out[i] = has[i] ? i : first;
    return out;
  }();

  //! One call: choose, set the row's tuning values for the call, check arguments, run.
  template <collective C, class Ctx>
  static void run(Ctx& c, const void* in, void* out, std::size_t n, dtype t, op o, int root) {
    control& ctl = control_of(c);
    const tuner::choice& chosen = ctl.choose(C, tuner::class_of(t), static_cast<std::uint64_t>(n) * size_of(t));
    const std::uint32_t i = runner<C, Ctx>[chosen.candidate];
    struct restore {
      Ctx& c;
      const tuner::overrides* before;
      ~restore() { c.set_tuning(before); }
    } scope{c, c.tuning_overrides()};
    c.set_tuning(chosen.tuning);
    using T = typename Ctx::transport_type;
    if constexpr (checks_arguments<T>) {
      if (i != checker<T> && c.descriptor()) {
        candidate<checker<T>>::agree(c);
        c.mark_checked();
      }
    }
    if (log_enabled(log_level::debug)) log_choice(c, C, n * size_of(t), i, chosen, ctl.forced());
    ctl.ran(i);
    invoke<C>(i, c, in, out, n, t, o, root, std::make_index_sequence<count>{});
  }

  template <collective C, class Ctx, std::size_t... I>
  static void invoke(std::uint32_t i, Ctx& c, const void* in, void* out, std::size_t n, dtype t, op o, int root,
                     std::index_sequence<I...>) {
    (void)((i == I && (invoke_one<C, I>(c, in, out, n, t, o, root), true)) || ...);
  }
  template <collective C, std::size_t I, class Ctx>
  static void invoke_one(Ctx& c, const void* in, void* out, std::size_t n, dtype t, op o, int root) {
    if constexpr (tuned_detail::runs<C, candidate<I>, Ctx>) run_collective<C, candidate<I>>(c, in, out, n, t, o, root);
  }

  template <class Ctx>
  static control& control_of(Ctx& c) {
    return c.template state<control>([&]() -> std::shared_ptr<control> {
      throw invalid_argument(c.where() + std::string(name) +
                             " has no table here: it runs as a communicator's algorithm, which reads and agrees its "
                             "table when the communicator is made; inside a composition (hierarchical<I, X>) name "
                             "one algorithm per level");
    });
  }

  template <class X, class Ctx>
  static void prepare_candidate(Ctx& c) {
    if constexpr (prepared_algorithm<X, Ctx>) X::prepare(c);
  }

  //! world, nodes, ranks per node (0 when nodes differ). Over a transport that carries device memory
  //! only (nccl) there is no node map: nodes and ranks per node are 0 (unknown), and no row matches.
  template <class Ctx>
  static tuner::layout layout_of(const Ctx& c) {
    if constexpr (Ctx::transport_type::traits.device_memory) {
      return {c.size(), 0, 0};
    } else {
      const node_map& m = c.nodes();
      return {c.size(), m.nodes(), m.even() ? c.size() / m.nodes() : 0};
    }
  }

  //! With no row for a call: the candidate algorithm::automatic would run here (its rule), when it
  //! is one of them, else the first.
  template <class Ctx>
  static std::uint32_t fallback_for(const tuner::layout& here) {
    const std::string_view wanted = automatic::choice_name<typename Ctx::transport_type>(here.ranks_per_node);
    for (std::uint32_t i = 0; i < count; ++i)
      if (control::names[i] == wanted) return i;
    return 0;
  }

  //! Whether `r` is one of the table's rows (not one the selection made for an unmeasured layout).
  static bool in_rows(const tuner::table& t, const tuner::row* r) {
    const std::less<const tuner::row*> below;
    return !t.rows.empty() && !below(r, t.rows.data()) && below(r, t.rows.data() + t.rows.size());
  }

  template <class Ctx>
  static void log_choice(Ctx& c, collective kind, std::size_t bytes, std::uint32_t ran, const tuner::choice& chosen,
                         bool forced) {
    const tuner::table& table = control_of(c).table();
    std::string line = c.where() + std::string(name) + " runs " + std::string(control::names[ran]) + " for " +
                       std::to_string(bytes) + " bytes";
    if (forced) line += " (forced)";
    else if (chosen.from && in_rows(table, chosen.from))
      line += " (" + tuner::row_where(table, static_cast<std::size_t>(chosen.from - table.rows.data())) + "algorithm " +
              chosen.from->algorithm + ")";
    else if (chosen.from)
      line += " (a row made for this layout: " + chosen.from->reason + ")";  // interpolated or predicted
    else line += " (no row: " + control_of(c).selection().how() + ")";
    if (ran != chosen.candidate)
      line += ", as " + std::string(control::names[chosen.candidate]) + " has no " + std::string(name_of(kind));
    log(log_level::debug, c.rank(), line);
  }
};

}  // namespace tutti::algorithm

// Named in the communicator's refusals where one of its candidates has the collective (core/listed.hpp).
TUTTI_LIST_ALGORITHM_AT(7, "tuned<A...> (when one of them has it)", tutti::algorithm::tuned<tutti::any_algorithm>);
