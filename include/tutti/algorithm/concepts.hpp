//! @file concepts.hpp  The Algorithm concept and per-collective capability checks.
#pragma once
#include <concepts>
#include <cstddef>
#include <string_view>

#include "tutti/core/collective.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"

namespace tutti {

/// An Algorithm schedules collectives over a transport: a class of static function templates,
/// each taking an algorithm::context<Transport>& first. It declares
/// `using tutti_role = tutti::role::algorithm;` and `static constexpr std::string_view name`.
/// Collectives it lacks are simply absent; calling one is a compile-time error naming both.
template <class A>
concept algorithm_policy = std::same_as<typename A::tutti_role, role::algorithm> && requires {
  { A::name } -> std::convertible_to<std::string_view>;
};

template <class A, class Ctx>
concept has_allreduce = requires(Ctx& c, const void* in, void* out, std::size_t n, dtype t, op o) {
  A::allreduce(c, in, out, n, t, o);
};
template <class A, class Ctx>
concept has_reduce_scatter = requires(Ctx& c, const void* in, void* out, std::size_t n, dtype t, op o) {
  A::reduce_scatter(c, in, out, n, t, o);
};
template <class A, class Ctx>
concept has_allgather = requires(Ctx& c, const void* in, void* out, std::size_t n, dtype t) {
  A::allgather(c, in, out, n, t);
};
template <class A, class Ctx>
concept has_broadcast = requires(Ctx& c, const void* in, void* out, std::size_t n, dtype t, int root) {
  A::broadcast(c, in, out, n, t, root);
};
template <class A, class Ctx>
concept has_barrier = requires(Ctx& c) { A::barrier(c); };
template <class A, class Ctx>
concept has_reduce = requires(Ctx& c, const void* in, void* out, std::size_t n, dtype t, op o, int root) {
  A::reduce(c, in, out, n, t, o, root);
};
template <class A, class Ctx>
concept has_alltoall = requires(Ctx& c, const void* in, void* out, std::size_t n, dtype t) {
  A::alltoall(c, in, out, n, t);
};

//! Algorithm A implements collective C over context Ctx, with the signature of C's row
//! (core/collective_traits.hpp): what the communicator's refusals and algorithm::tuned's dispatch ask.
template <collective C, class A, class Ctx>
concept has_collective = (C == collective::allreduce && has_allreduce<A, Ctx>) ||
                         (C == collective::reduce_scatter && has_reduce_scatter<A, Ctx>) ||
                         (C == collective::allgather && has_allgather<A, Ctx>) ||
                         (C == collective::broadcast && has_broadcast<A, Ctx>) ||
                         (C == collective::barrier && has_barrier<A, Ctx>) ||
                         (C == collective::reduce && has_reduce<A, Ctx>) ||
                         (C == collective::alltoall && has_alltoall<A, Ctx>);

//! Calls A's collective C: the one place that spells each collective's parameter list.
template <collective C, class A, class Ctx>
void run_collective(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, int root) {
  if constexpr (C == collective::allreduce) A::allreduce(c, in, out, count, t, o);
  else if constexpr (C == collective::reduce_scatter) A::reduce_scatter(c, in, out, count, t, o);
  else if constexpr (C == collective::allgather) A::allgather(c, in, out, count, t);
  else if constexpr (C == collective::broadcast) A::broadcast(c, in, out, count, t, root);
  else if constexpr (C == collective::barrier) A::barrier(c);
  else if constexpr (C == collective::reduce) A::reduce(c, in, out, count, t, o, root);
  else A::alltoall(c, in, out, count, t);
}

//! The algorithm prepares itself once per communicator: `template <class Ctx> static void
//! prepare(Ctx& c)` is called by both communicator constructors, collectively (every rank, in the
//! same order as every other collective step), after the node map is learnt (c.nodes()) and before
//! any collective. The context carries no call (c.where() names only the rank), its tag is
//! tags::tuning_table and its deadline TUTTI_TIMEOUT from the start of the call; what it makes
//! goes into c.state<S>() and is found there by every later collective. An error thrown here
//! leaves the constructor (so it should be the same on every rank: algorithm::tuned's table
//! check throws tutti::mismatch everywhere alike). algorithm::tuned reads and agrees its tuning
//! table here; docs/extending.md says when another algorithm would want to.
template <class A, class Ctx>
concept prepared_algorithm = requires(Ctx& c) { A::prepare(c); };

//! The algorithm's allreduce carries lossy codecs (codec::fp16, bf16, int8) with a schedule that
//! quantises every element a bounded number of times: it says so with
//! `static constexpr bool carries_lossy_codecs = true;` (algorithm/compressed.hpp has the schedule).
template <class A>
concept lossy_codec_carrier = requires { requires A::carries_lossy_codecs; };

//! The algorithm's buffers may be device memory: it says so with
//! `static constexpr bool handles_device_memory = true;` (algorithm::native). Over a transport whose
//! traits.device_memory is true it is the only kind the communicator accepts: every other
//! algorithm reads, copies and reduces buffers on the host.
template <class A>
concept device_memory_algorithm = requires { requires A::handles_device_memory; };

//! The algorithm checks ranks' arguments in its own first synchronisation (saving the
//! communicator's separate round) over transport T: it sets `checks_arguments<T>` and offers
//! `agree(ctx)`, which runs just that check (for a rank whose own arguments were refused).
template <class A, class Ctx>
concept checks_arguments = requires(Ctx& c) {
  requires A::template checks_arguments<typename Ctx::transport_type>;
  A::agree(c);
};

}  // namespace tutti
