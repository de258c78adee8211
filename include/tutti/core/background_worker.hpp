//! @file background_worker.hpp  One thread that runs posted tasks in order, for overlapping one
//! part of a collective with another (algorithm::hierarchical's pipeline: the network level of one
//! chunk while the calling thread reduces the next inside the node).
//!
//! A task's exception is kept and rethrown by the wait() that asks for that task or a later one;
//! tasks posted after a failed one are skipped (they would build on its result). The tasks bound
//! their own waits (they wait on a transport with the collective's deadline), so wait() needs none
//! of its own: it returns once the task has run or thrown. The thread starts with the first post
//! and is joined by the destructor, which first lets the posted tasks finish.
//!
//! `linger`: how long the thread, out of work, keeps looking for the next task before it sleeps
//! (0 by default: it sleeps at once). A caller that posts one short task after another (the torch
//! backend's small collectives) otherwise pays a futex wake-up for each, 10–30 µs on a VM.
#pragma once
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace tutti {

class background_worker {
 public:
  //! `thread_name`: what `top -H`, gdb and perf call the thread (at most 15 characters).
  explicit background_worker(const char* thread_name = "tutti-worker",
                             std::chrono::microseconds linger = std::chrono::microseconds(0)) noexcept
      : name_(thread_name), linger_(linger) {}
  background_worker(const background_worker&) = delete;
  background_worker& operator=(const background_worker&) = delete;

  ~background_worker() {
    {
      std::unique_lock lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  //! Queues `task` after the ones posted before; returns its ticket for wait().
  std::uint64_t post(std::function<void()> task) {
    if (!thread_.joinable()) {
      thread_ = std::thread([this] { loop(); });
      ::pthread_setname_np(thread_.native_handle(), name_);
    }
    std::uint64_t ticket = 0;
    {
      std::unique_lock lock(mutex_);
      queue_.push_back(std::move(task));
      ticket = ++posted_;
      queued_.store(ticket, std::memory_order_release);
    }
    wake_.notify_all();
    return ticket;
  }

  //! Returns once the task of `ticket` (and every one before it) has run; rethrows the first
  //! failure among them. After a failure the worker stays failed until reset().
  void wait(std::uint64_t ticket) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return finished_ >= ticket; });
    if (failure_) std::rethrow_exception(failure_);
  }

  //! Waits for every posted task, ignoring failures: what a caller that is already failing does
  //! before the buffers the tasks use go away.
  void drain() noexcept {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return finished_ >= posted_; });
  }

  //! Drains when it goes out of scope: a caller whose posted tasks use its buffers or its frame
  //! leaves (also by an exception) only once no task uses them any more.
  class drain_guard {
   public:
    explicit drain_guard(background_worker& w) noexcept : w_(w) {}
    drain_guard(const drain_guard&) = delete;
    drain_guard& operator=(const drain_guard&) = delete;
    ~drain_guard() { w_.drain(); }

   private:
    background_worker& w_;
  };

  //! Drains, then forgets a failure: the next collective starts clean.
  void reset() noexcept {
    drain();
    std::unique_lock lock(mutex_);
    failure_ = nullptr;
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (queue_.empty() && linger_.count() > 0) {
        const std::uint64_t seen = finished_;
        lock.unlock();
        const auto until = std::chrono::steady_clock::now() + linger_;
        while (queued_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until)
          std::this_thread::yield();
        lock.lock();
      }
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      const bool skip = failure_ != nullptr;
      lock.unlock();
      std::exception_ptr failed;
      if (!skip) {
        try {
          task();
        } catch (...) {
          failed = std::current_exception();
        }
      }
      task = nullptr;  // what it captured goes before the waiter hears it is done
      lock.lock();
      if (failed && !failure_) failure_ = failed;
      ++finished_;
      done_.notify_all();
    }
  }

  const char* name_;
  std::chrono::microseconds linger_;
  std::atomic<std::uint64_t> queued_{0};  //!< posted_, readable without the lock (the lingering loop)
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<std::function<void()>> queue_;
  std::uint64_t posted_ = 0, finished_ = 0;
  std::exception_ptr failure_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tutti
