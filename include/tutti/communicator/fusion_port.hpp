//! @file fusion_port.hpp  All the fusion engine may do with its communicator (fusion/port.hpp; the
//! algorithm's control for joint tuning: fusion/joint.hpp): the engine sits below the communicator
//! and never sees it. The communicator befriends this port.
#pragma once
#include <string>

#include "tutti/algorithm/phases.hpp"
#include "tutti/codec/error_feedback.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/tensor_view.hpp"

namespace tutti::detail {

template <class Communicator>
class communicator_fusion_port {
 public:
  using transport_type = typename Communicator::transport_type;
  using codec_type = typename Communicator::codec_type;
  explicit communicator_fusion_port(Communicator& c) noexcept : c_(&c) {}
  [[nodiscard]] int rank() const noexcept { return c_->rank(); }
  [[nodiscard]] int size() const noexcept { return c_->size(); }
  [[nodiscard]] transport_type& transport() const noexcept { return *c_->transport_; }
  [[nodiscard]] auto& algorithm_control() const requires requires(Communicator& c) { c.algorithm_control(); }
  { return c_->algorithm_control(); }
  //! The engine's collectives: the same checked allreduce, numbered in the engine's own sequence,
  //! its phases recorded into `phases` (the engine's timeline) while it runs.
  void fused_allreduce(const_tensor_view in, tensor_view out, op o, error_feedback* fb,
                       algorithm::phase_log* phases) const {
    struct recording {
      Communicator* c;
      ~recording() { c->phase_log_ = nullptr; }
    } scope{c_};
    c_->phase_log_ = phases;
    c_->allreduce_checked(in, out, o, fb);
  }
  void engine_failed(const std::string& what) const {
    if (!c_->broken_.empty()) return;
    c_->broken_ = on_rank(c_->rank()) + "fusion engine: " + what;
    c_->transport_->abort();
  }

 private:
  Communicator* c_;
};

}  // namespace tutti::detail
