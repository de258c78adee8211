//! @file collective_work.hpp  A collective's c10d Work: completed by the group's worker once the
//! collective has run (wait() rethrows its tutti::error), and its future (what DDP waits on) with it.
#pragma once
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <exception>
#include <utility>
#include <vector>

namespace tutti_torch {

class collective_work : public c10d::Work {
 public:
  collective_work(int rank, c10d::OpType type, std::vector<at::Tensor> result, std::vector<at::Tensor> held)
      : c10d::Work(rank, type), result_(std::move(result)), held_(std::move(held)),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}
  std::vector<at::Tensor> result() override { return result_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  //! The worker's: the collective ran, and failed with `failed` unless it is null.
  void complete(std::exception_ptr failed) {
    finish(failed);
    if (failed) future_->setError(failed);
    else future_->markCompleted(c10::IValue(result_));
  }

 private:
  std::vector<at::Tensor> result_;  // the outputs, alive until the Work goes
  std::vector<at::Tensor> held_;    // the inputs and temporaries the collective reads, likewise
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace tutti_torch
