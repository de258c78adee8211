// What a user's code instantiates, compiled with the warnings users turn on (-Wall -Wextra
// -Wshadow -Wsign-conversion -Werror; packaging.user_warnings): tutti's headers must add none.
// Compiled, not run: every collective of every built algorithm over the transports tutti has.
#include <tutti/tutti.hpp>

#include <cstdint>
#include <vector>

namespace {

template <class Comm>
void every_collective(Comm& comm) {
  using A = typename Comm::algorithm_type;
  using C = typename Comm::context_type;
  std::vector<float> f(1000, 1.0f), g(1000);
  std::vector<std::int64_t> n(10, 1);
  std::vector<tutti::half> h(8, tutti::half(1.0f));
  comm.allreduce(f, tutti::op::sum);
  comm.allreduce(h, tutti::op::avg);
  comm.allreduce_async("f", f, tutti::op::sum).wait();  // the fusion engine, instantiated
  if constexpr (tutti::has_reduce_scatter<A, C>) comm.reduce_scatter(f, g, tutti::op::sum);
  if constexpr (tutti::has_allgather<A, C>) comm.allgather(f, g);
  comm.broadcast(n, 0);
  comm.reduce(f, tutti::op::max, 0);
  comm.barrier();
  if constexpr (tutti::has_alltoall<A, C>) comm.alltoall(f, g);
}

//! A communicator with a lossy codec: float allreduce is compressed, the rest moves data exactly.
template <class Comm>
void with_codec(Comm& comm) {
  std::vector<float> f(1000, 1.0f), g(1000);
  comm.allreduce(f, tutti::op::avg);
  comm.allreduce(f, g, tutti::op::sum);
  comm.broadcast(f, 0);
  comm.barrier();
}

//! A codec with error feedback: the caller keeps one error_feedback per tensor.
template <class Comm>
void with_feedback(Comm& comm) {
  std::vector<float> f(1000, 1.0f), g(1000);
  tutti::error_feedback ef;
  comm.allreduce(f, tutti::op::avg, ef);
  comm.allreduce(f, g, tutti::op::sum, ef);
}

template <class Algorithm, class Codec>
void feedback_over_threads() {
  tutti::transport::inproc::run(2, [](tutti::transport::inproc& t) {
    tutti::communicator<tutti::transport::inproc, Algorithm, Codec> comm(t);
    with_feedback(comm);
  });
}

template <class Algorithm, class Codec>
void codec_over_threads() {
  tutti::transport::inproc::run(2, [](tutti::transport::inproc& t) {
    tutti::communicator<tutti::transport::inproc, Algorithm, Codec> comm(t);
    with_codec(comm);
  });
}

template <class Algorithm>
void over_threads() {
  tutti::transport::inproc::run(2, [](tutti::transport::inproc& t) {
    tutti::communicator<tutti::transport::inproc, Algorithm> comm(t);
    every_collective(comm);
  });
}

template <class Algorithm>
void over_processes() {
  auto comm = tutti::communicator<tutti::transport::shm, Algorithm>::from_env();
  every_collective(comm);
}

}  // namespace

void tutti_user_warnings_instantiate() {
  namespace a = tutti::algorithm;
  over_threads<a::ring>();
  over_threads<a::tree>();
  over_threads<a::halving_doubling>();
  over_threads<a::hierarchical<a::ring, a::ring>>();
  over_threads<a::automatic>();
  over_processes<a::direct>();
  over_processes<a::hierarchical<a::direct, a::ring>>();
  over_processes<a::automatic>();
  codec_over_threads<a::ring, tutti::codec::fp16>();
  codec_over_threads<a::halving_doubling, tutti::codec::int8>();
  codec_over_threads<a::hierarchical<a::ring, a::ring>, tutti::codec::bf16>();
  feedback_over_threads<a::ring, tutti::codec::topk>();
  feedback_over_threads<a::hierarchical<a::ring, a::halving_doubling>, tutti::codec::onebit>();
  auto lossy = tutti::communicator<tutti::transport::shm, a::automatic, tutti::codec::int8>::from_env();
  with_codec(lossy);
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
  auto comm = tutti::communicator<tutti::transport::multi_node, a::automatic>::from_env();
  every_collective(comm);
#endif
}
