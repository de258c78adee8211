//! @file with_transport.hpp  The job's transport as a type, from transport_choice.hpp's decision:
//! a program's body compiled once per transport and run for the one its environment calls for, so
//! one program runs under tutti-run, torchrun, mpirun or srun with no code change.
//! Linking: multi_node needs tutti::ucx, tutti::net (and tutti::pmix for mpirun/srun without a
//! store address), as any program naming transport::multi_node.
#pragma once
#include <utility>

#include "tutti/trainer/transport_choice.hpp"
#include "tutti/transport/multi_node.hpp"
#include "tutti/transport/shm.hpp"

namespace tutti::trainer {

//! Calls `f.template operator()<Transport>()` with the transport type `kind` names — a program's
//! body (communicator, trainer) compiled once per transport, run for the one chosen:
//!   with_transport(transport_from_env().kind, [&]<class Transport>() { return train<Transport>(); });
template <class F>
decltype(auto) with_transport(transport_kind kind, F&& f) {
  if (kind == transport_kind::multi_node) return std::forward<F>(f).template operator()<transport::multi_node>();
  return std::forward<F>(f).template operator()<transport::shm>();
}

}  // namespace tutti::trainer
