//! @file port.hpp  engine_port: all a fusion engine may ask of the communicator that owns it.
//!
//! The engine sits below the communicator: it must not call up into the communicator's members.
//! Instead the communicator hands it a port (Aluminum's progress engine talks to requests through a
//! narrow step() interface the same way): who this rank is, the transport its negotiation messages
//! travel on (fusion/channel.hpp), one checked allreduce of a buffer, and where to report that the
//! engine stopped on its own error. A port is a small value; its calls are direct, not virtual.
#pragma once
#include <concepts>
#include <exception>
#include <string>

#include "tutti/algorithm/phases.hpp"
#include "tutti/codec/error_feedback.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/tensor_view.hpp"
#include "tutti/transport/concepts.hpp"

namespace tutti::fusion {

template <class P>
concept engine_port = requires(P& p, const P& cp, const_tensor_view in, tensor_view out, op o, error_feedback* fb,
                               algorithm::phase_log* phases, std::exception_ptr failure) {
  requires transport_policy<typename P::transport_type>;
  typename P::codec_type;  //!< what the engine's fused buffers are encoded with (lossless? error feedback?)
  { cp.rank() } -> std::same_as<int>;
  { cp.size() } -> std::same_as<int>;
  //! The transport the negotiation's messages travel on, between the engine's collectives.
  { p.transport() } -> std::same_as<typename P::transport_type&>;
  //! One allreduce of a (fused) buffer, checked and numbered in the engine's own sequence; its
  //! phases go to `phases` when not null. Throws like the communicator's allreduce.
  p.fused_allreduce(in, out, o, fb, phases);
  //! The engine stopped on an error outside a collective (its negotiation failed): the communicator
  //! is then unusable, as after a failed collective; returns the error its handles get (the same, or
  //! one that tells a stall as the job's verdict).
  { p.engine_failed(failure) } -> std::same_as<std::exception_ptr>;
};
// Optionally `p.algorithm_control()`: the run-time control of the communicator's algorithm
// (algorithm::tuned<...>), for joint tuning — fusion/joint.hpp's choosing_port.

}  // namespace tutti::fusion
