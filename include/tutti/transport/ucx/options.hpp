//! @file options.hpp  ucx_options: the knobs of transport::ucx, read from TUTTI_* variables.
//!
//! UCX's own variables (UCX_TLS, UCX_NET_DEVICES, UCX_TCP_*, ...) are not read here: the UCP
//! configuration the transport loads picks them up untouched, so users tune UCX the way they
//! already know.
#pragma once
#include <algorithm>
#include <chrono>

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

  [[nodiscard]] static ucx_options from_env() {
    ucx_options o;
    o.timeout = config::timeout();
    o.close_timeout = std::min(o.timeout, config::seconds("TUTTI_UCX_CLOSE_TIMEOUT", o.close_timeout));
    o.spin_before_yield = static_cast<unsigned>(
        config::integer("TUTTI_UCX_SPIN", static_cast<long long>(o.spin_before_yield), 1, 1000000));
    return o;
  }
};

}  // namespace tutti::transport
