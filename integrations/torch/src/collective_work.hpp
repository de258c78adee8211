//! @file collective_work.hpp  A collective's c10d Work: completed by the group's worker once the
//! collective has run (wait() rethrows its tutti::error), and its future (what DDP waits on) with it.
#pragma once
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

#include <tutti/core/config.hpp>

namespace tutti_torch {

class collective_work : public c10d::Work {
 public:
  collective_work(int rank, c10d::OpType type, std::vector<at::Tensor> result, std::vector<at::Tensor> held)
      : c10d::Work(rank, type), result_(std::move(result)), held_(std::move(held)),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}
  std::vector<at::Tensor> result() override { return result_; }

  //! Looks for completion for a moment before sleeping in Work::wait: a small collective is done in
  //! microseconds, and a futex wake-up costs 10–30 µs on a VM (the group's worker lingers likewise).
  bool wait(std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) override {  // 0: none, as c10d
    const auto until = std::chrono::steady_clock::now() + linger();
    while (!isCompleted() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    return c10d::Work::wait(timeout);
  }
  //! TUTTI_TORCH_LINGER_US (default 50, 0 to sleep at once; read once): how long a waiter and the
  //! group's worker look for the next event before sleeping.
  static std::chrono::microseconds linger() {
    static const auto us = std::chrono::microseconds(tutti::config::integer("TUTTI_TORCH_LINGER_US", 50, 0, 100000));
    return us;
  }
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
