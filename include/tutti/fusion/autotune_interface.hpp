//! @file autotune_interface.hpp  fusion::tuner, the interface the fusion engine asks for new parameters (fusion::autotuned implements it).
#pragma once
#include <cstddef>
#include <optional>

#include "tutti/fusion/negotiation.hpp"

namespace tutti::fusion {

//! Lives on rank 0 only: parameters are decided on one rank and sent to all in the next response,
//! so every rank applies them at the same round, between collectives (never during one).
class tuner {
 public:
  virtual ~tuner() = default;
  //! After every round: the bytes and tensors this round completed, how many distinct tensor names
  //! the job has (a training step's worth), and the time. Returns parameters to use from the next
  //! round on, or nothing to keep the current ones.
  virtual std::optional<parameters> observe(std::size_t bytes, std::size_t tensors, std::size_t distinct,
                                            clock::time_point now) = 0;
};

}  // namespace tutti::fusion
