//! @file automatic.hpp  algorithm::automatic — the best built algorithm for the transport, chosen
//! at compile time: `direct` on a one-sided transport (shm), `ring` on any other.
//!
//! A stand-in until `tuned<...>` chooses by measurement: on one host, direct beat ring at every
//! size measured (bench/results/, docs/tuning.md).
#pragma once
#include <string_view>
#include <type_traits>

#include "tutti/algorithm/direct.hpp"
#include "tutti/algorithm/ring.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/transport/concepts.hpp"

namespace tutti::algorithm {

struct automatic {
  using tutti_role = role::algorithm;
  static constexpr std::string_view name = "automatic";

  //! The algorithm this picks for a transport.
  template <class Transport>
  using for_transport = std::conditional_t<one_sided_transport<Transport>, direct, ring>;

  //! As direct does; ring leaves the check to the communicator.
  template <class Transport>
  static constexpr bool checks_arguments = one_sided_transport<Transport>;

  template <class Ctx>
  static void agree(Ctx& c) {
    pick<Ctx>::agree(c);
  }
  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    pick<Ctx>::allreduce(c, in, out, count, t, o);
  }
  template <class Ctx>
  static void reduce_scatter(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    pick<Ctx>::reduce_scatter(c, in, out, count, t, o);
  }
  template <class Ctx>
  static void allgather(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    pick<Ctx>::allgather(c, in, out, count, t);
  }
  template <class Ctx>
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t count, dtype t, int root) {
    pick<Ctx>::broadcast(c, in, out, count, t, root);
  }
  template <class Ctx>
  static void reduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, int root) {
    pick<Ctx>::reduce(c, in, out, count, t, o, root);
  }
  template <class Ctx>
  static void alltoall(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    pick<Ctx>::alltoall(c, in, out, count, t);
  }
  template <class Ctx>
  static void barrier(Ctx& c) {
    pick<Ctx>::barrier(c);
  }

 private:
  template <class Ctx>
  using pick = for_transport<typename Ctx::transport_type>;
};

}  // namespace tutti::algorithm
