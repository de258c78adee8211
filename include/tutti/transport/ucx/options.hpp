//! @file options.hpp  ucx_options: the knobs of transport::ucx, read from TUTTI_* variables.
//!
//! UCX's own variables (UCX_TLS, UCX_NET_DEVICES, UCX_TCP_*, ...) are not read here: the UCP
//! configuration the transport loads picks them up untouched, so users tune UCX the way they
//! already know. One UCX setting tutti makes itself, only where the user made none: rndv_thresh.
#pragma once
#include <algorithm>
#include <chrono>
#include <string>

#include "tutti/core/config.hpp"

namespace tutti::transport {

struct ucx_options {
  //! TUTTI_TIMEOUT: how long the constructor waits for peers' worker addresses, and the bound on
  //! the shutdown barrier (ranks may legitimately finish that far apart).
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);
  //! TUTTI_UCX_CLOSE_TIMEOUT: how long the destructor lets endpoints flush what is still in flight
  //! before it gives up on them (never longer than timeout).
  std::chrono::nanoseconds close_timeout = std::chrono::seconds(10);
  //! TUTTI_UCX_SPIN: empty progress rounds a wait makes before it yields the core. Lowered to 1
  //! automatically when ranks outnumber this process's cores: spinning then only delays the peer
  //! that needs the core.
  unsigned spin_before_yield = 1000;
  //! TUTTI_UCX_RNDV_THRESH: UCX's RNDV_THRESH when tutti chose the network (it handed UCX an IP
  //! interface, so UCX reaches other hosts over TCP) and the user set no UCX_RNDV_THRESH; "auto"
  //! leaves UCX's own. Default "inf": every message eager. Why (bench/results/ucx-eager-large-20261127):
  //! a ring between 2 namespace hosts at 1 Gbit/s (tc tbf) reached 0.07 GB/s busbw with UCX's
  //! rendezvous and 0.12 GB/s eager, the link's full duplex ceiling (ucx_perftest: 112 MB/s each way
  //! at once); at 10 Gbit/s 0.49-0.74 against 0.82-1.08 eager; unshaped (veth, memory-bound) the same
  //! within the noise. Likely cause: rendezvous over TCP waits on control messages (RTR, the put's
  //! acknowledgement) that queue behind the other direction's data. Eager costs a receive-side copy.
  std::string rndv_thresh = "inf";

  [[nodiscard]] static ucx_options from_env() {
    ucx_options o;
    o.timeout = config::timeout();
    o.close_timeout = std::min(o.timeout, config::seconds("TUTTI_UCX_CLOSE_TIMEOUT", o.close_timeout));
    o.spin_before_yield = static_cast<unsigned>(
        config::integer("TUTTI_UCX_SPIN", static_cast<long long>(o.spin_before_yield), 1, 1000000));
    if (auto v = config::raw("TUTTI_UCX_RNDV_THRESH"); v && !v->empty()) o.rndv_thresh = *v;
    return o;
  }
};

}  // namespace tutti::transport
