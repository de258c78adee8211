//! @file fusion_port.hpp  All the fusion engine may do with its communicator (fusion/port.hpp; the
//! algorithm's control for joint tuning: fusion/joint.hpp): the engine sits below the communicator
//! and never sees it. The communicator befriends this port.
#pragma once
#include <exception>
#include <optional>
#include <string>

#include "tutti/algorithm/phases.hpp"
#include "tutti/codec/error_feedback.hpp"
#include "tutti/communicator/first_loss.hpp"
#include "tutti/communicator/stall_inspector.hpp"
#include "tutti/core/error.hpp"
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
  //! The engine's own failure (its negotiation's): the communicator becomes unusable, and the error
  //! is told as a blocking collective's would be (communicator::guarded): at the engine's deadline
  //! the stall verdict, decided from the oldest tensor; a lost peer read as the verdict a stalled
  //! rank wrote, else as the job's first loss, recorded before this rank aborts (its abort is what
  //! the peers see next: without the record they would blame this rank).
  std::exception_ptr engine_failed(std::exception_ptr failure) const {
    const std::string engine = on_rank(c_->rank(), "fusion engine");
    try {
      std::rethrow_exception(failure);
    } catch (const timeout& e) {
      if (const auto v = c_->inspector_ ? c_->inspector_->tensor_verdict() : std::nullopt)
        failure = std::make_exception_ptr(timeout(engine + stalled_text(*v) + e.what()));
    } catch (const peer_lost& e) {
      if (const auto v = c_->inspector_ ? c_->inspector_->decided() : std::nullopt) {
        failure = std::make_exception_ptr(timeout(engine + stalled_text(*v) + e.what()));
      } else {
        failure = loss_error(*c_->transport_, e, engine);
      }
    } catch (...) {
    }
    if (c_->broken_.empty()) {  // the communicator's later calls are refused with this failure's class
      c_->broken_.record(failure, engine + ": ");
      c_->transport_->abort();
    }
    return failure;
  }

 private:
  Communicator* c_;
};

}  // namespace tutti::detail
