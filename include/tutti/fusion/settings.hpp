//! @file settings.hpp  How a fusion engine is set up (the communicator fills it: fusion/start.hpp).
#pragma once
#include <chrono>

#include "tutti/fusion/negotiation.hpp"

namespace tutti::fusion {

//! How an engine is set up; start.hpp fills it from the strategy and TUTTI_* variables.
struct engine_settings {
  parameters initial;
  std::chrono::nanoseconds stall_timeout = std::chrono::seconds(60);  //!< TUTTI_STALL_TIMEOUT
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);       //!< each round's deadline
  std::chrono::microseconds idle_cycle{2000};  //!< the pace of rounds while no rank has work
  bool autotune = false;                       //!< TUTTI_AUTOTUNE: a tuner may change `initial`
  bool overlap_copies = false;  //!< TUTTI_FUSION_OVERLAP: pack and unpack beside the collectives (batching.hpp)
};

}  // namespace tutti::fusion
