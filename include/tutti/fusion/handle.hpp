//! @file handle.hpp  fusion::handle: what allreduce_async returns, to wait on or test; a group's tensor_request.
#pragma once
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/tensor_view.hpp"

namespace tutti::fusion {

//! One tensor of an allreduce_async group (communicator::allreduce_async_group).
struct tensor_request {
  std::string name;
  const_tensor_view in;
  tensor_view out;
};

//! Shared between the caller's handle and the engine that completes it.
class completion {
 public:
  using callback = std::function<void(std::exception_ptr)>;
  explicit completion(std::string name, callback cb = {}) : name_(std::move(name)), callback_(std::move(cb)) {}

  //! Called once, by the engine: the tensor's output is written (error == nullptr) or never will be.
  //! The callback runs first, then waiters are released: once wait() returns, the engine touches
  //! nothing of the caller's, the callback's captures included (a trainer that waits for its
  //! handles in its destructor was read by its own callback after it was gone). A callback must not
  //! wait on its own handle.
  void complete(std::exception_ptr error, int rank) noexcept {
    callback cb;
    {
      std::lock_guard lock(mutex_);
      cb = std::move(callback_);
    }
    if (cb) {
      try {
        cb(error);
      } catch (const std::exception& e) {  // the engine's thread must survive a caller's callback
        log(log_level::warn, rank, "allreduce_async '" + name_ + "': the completion callback threw: " + e.what());
      } catch (...) {
        log(log_level::warn, rank, "allreduce_async '" + name_ + "': the completion callback threw");
      }
    }
    {
      std::lock_guard lock(mutex_);
      done_ = true;
      error_ = error;
    }
    cv_.notify_all();
  }

  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }
  bool wait_for(std::chrono::nanoseconds d) {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, d, [&] { return done_; })) return false;
    if (error_) std::rethrow_exception(error_);
    return true;
  }
  [[nodiscard]] bool done() {
    std::lock_guard lock(mutex_);
    return done_;
  }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
  callback callback_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

//! The result of `allreduce_async(name, tensor, op)`: the tensor may be read (and its buffers
//! reused) once wait() returns. wait() rethrows the tensor's failure: tutti::mismatch when ranks
//! enqueued the name with different sizes, dtypes or ops; tutti::timeout when a rank never enqueued
//! it (TUTTI_STALL_TIMEOUT); peer_lost / transport_error when the job broke. The engine always
//! completes a handle (no wait hangs past the stall deadline), and a handle may be dropped unwaited.
class handle {
 public:
  handle() = default;
  explicit handle(std::shared_ptr<completion> c) : c_(std::move(c)) {}

  void wait() { state().wait(); }
  //! true once done (rethrowing a failure); false if `d` passed first.
  bool wait_for(std::chrono::nanoseconds d) { return state().wait_for(d); }
  [[nodiscard]] bool test() { return state().done(); }  //!< done, successfully or not (wait() says which)
  [[nodiscard]] const std::string& name() const { return c_ ? c_->name() : empty_name(); }
  [[nodiscard]] bool valid() const noexcept { return c_ != nullptr; }

 private:
  completion& state() {
    if (!c_) throw invalid_argument("tutti::fusion::handle: waited on a default-constructed handle");
    return *c_;
  }
  static const std::string& empty_name() {
    static const std::string n;
    return n;
  }
  std::shared_ptr<completion> c_;
};

//! Waits for every handle, then rethrows the first failure among them (in their order). Before
//! the first failure is thrown every tensor is done: the engine writes each one until its handle
//! completes, so a caller that throws at the first failure and frees the others' buffers lets the
//! engine write into freed memory. Default-constructed handles are skipped.
template <class Handles>
void wait_all(Handles& handles) {
  std::exception_ptr first;
  for (handle& h : handles) {
    if (!h.valid()) continue;
    try {
      h.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace tutti::fusion
