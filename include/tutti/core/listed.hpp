//! @file listed.hpp  TUTTI_LIST_ALGORITHM: an algorithm names itself, in its own file, for the refusals.
//!
//! When a communicator's Algorithm lacks a collective, the compile-time refusal lists the
//! algorithms that have it (communicator/collective_refusal.hpp). That list is read from here, not
//! typed: an algorithm's own file adds one line at namespace scope outside any namespace,
//!
//!     TUTTI_LIST_ALGORITHM(my_project::star);
//!
//! and from then on every refusal in that translation unit offers it where it fits — tutti's own
//! algorithms and a user's alike, with no edit anywhere else (tests/communicator checks this with
//! examples/03_own_algorithm). C++20 cannot enumerate specialisations, so each line fills the slot
//! numbered by __COUNTER__; the refusal scans the slots only when it fires, so a program that
//! compiles never pays for the list.
#pragma once
#include <cstddef>
#include <string_view>

#include "tutti/core/dtype.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"

namespace tutti {

//! Slot `N` of the list; TUTTI_LIST_ALGORITHM specialises one with `type`, `position`, `shown_as`.
template <unsigned N>
struct listed_algorithm {};

//! Slots a refusal scans: a listing line after this many uses of __COUNTER__ in its translation
//! unit is left out of the lists (headers are included first, so theirs never are); never an error,
//! since the list only decorates a refusal.
inline constexpr unsigned listed_algorithm_slots = 1024;

//! Where user algorithms go in a list: after tutti's own, in the order they were included.
inline constexpr int listed_last = 1000;

//! Stands for any part of a composed algorithm when a template is listed by one instance
//! (hierarchical<any_algorithm, any_algorithm>): declares every collective, defines none.
struct any_algorithm {
  using tutti_role = role::algorithm;
  static constexpr std::string_view name = "any";
  template <class C> static void allreduce(C&, const void*, void*, std::size_t, dtype, op);
  template <class C> static void reduce_scatter(C&, const void*, void*, std::size_t, dtype, op);
  template <class C> static void allgather(C&, const void*, void*, std::size_t, dtype);
  template <class C> static void broadcast(C&, const void*, void*, std::size_t, dtype, int);
  template <class C> static void barrier(C&);
  template <class C> static void reduce(C&, const void*, void*, std::size_t, dtype, op, int);
  template <class C> static void alltoall(C&, const void*, void*, std::size_t, dtype);
};

}  // namespace tutti

#define TUTTI_DETAIL_LIST_ALGORITHM(slot, at, shown, ...) \
  template <>                                             \
  struct tutti::listed_algorithm<(slot)> {                \
    using type = __VA_ARGS__;                             \
    static constexpr int position = (at);                 \
    static constexpr std::string_view shown_as = (shown); \
  }

//! Lists `...` (a type, commas allowed) under its `name`, after tutti's own algorithms.
#define TUTTI_LIST_ALGORITHM(...) TUTTI_DETAIL_LIST_ALGORITHM(__COUNTER__, ::tutti::listed_last, "", __VA_ARGS__)

//! Lists `...` at `position` (tutti's own: 1, 2, ...) shown as `shown` ("" for its `name`): a
//! template is listed by one instance, e.g. hierarchical<ring, ring> shown as "hierarchical<I, X>".
#define TUTTI_LIST_ALGORITHM_AT(position, shown, ...) \
  TUTTI_DETAIL_LIST_ALGORITHM(__COUNTER__, position, shown, __VA_ARGS__)
