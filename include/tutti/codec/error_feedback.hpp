//! @file error_feedback.hpp  tutti::error_feedback — what a sparse or 1-bit codec did not send yet.
//!
//! Error feedback (Seide et al. 2014; Karimireddy et al., EF-SignSGD, 2019; 1-bit Adam): before
//! encoding, a rank adds to its gradient what earlier steps' encodings left out, and keeps what
//! this step's encoding leaves out: v = x * scale + r; send C(v); r = v - D(C(v)). Over steps
//! every part of the gradient is sent eventually, so the running sum of what was sent tracks the
//! running sum of the gradients, off by the last residual only.
//!
//! The caller owns one per tensor and passes the same one at every step (a residual belongs to the
//! elements it was computed for): `comm.allreduce(grads, op::avg, feedback)`. It is sized on first
//! use; a later call with another element count is refused, naming both counts.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "tutti/core/error.hpp"

namespace tutti {

class error_feedback {
 public:
  error_feedback() = default;

  //! The residual for `count` elements: zero the first time, the same storage afterwards.
  [[nodiscard]] float* residual_for(std::size_t count, const std::string& where) {
    if (!sized_) {
      residual_.assign(count, 0.0f);
      sized_ = true;
    } else if (residual_.size() != count) {
      throw invalid_argument(where + "this error_feedback holds the residual of " + std::to_string(residual_.size()) +
                             " elements, but the tensor has " + std::to_string(count) +
                             " (keep one error_feedback per tensor)");
    }
    return residual_.data();
  }
  //! What has not been sent yet, per element (empty before the first use).
  [[nodiscard]] const std::vector<float>& residual() const noexcept { return residual_; }
  //! Forgets the residual (e.g. when the model's parameters are reloaded from a checkpoint).
  void reset() noexcept {
    residual_.clear();
    sized_ = false;
  }

 private:
  std::vector<float> residual_;
  bool sized_ = false;
};

}  // namespace tutti
