//! @file op_queue.hpp  An intrusive FIFO of operation records, so posting allocates nothing.
//!
//! shm queues its sends and receives per peer until progress moves them; inproc's fabric keeps
//! unmatched operations per channel and takes them out by tag. The record type supplies `next`
//! (and `tag`, for take()).
#pragma once
#include <cstdint>

namespace tutti::transport::detail {

template <class Op>
struct op_queue {
  Op* head = nullptr;
  Op* tail = nullptr;

  void push(Op* op) noexcept {
    op->next = nullptr;
    (tail ? tail->next : head) = op;
    tail = op;
  }
  //! Removes the first record (the queue is not empty).
  void pop() noexcept {
    head = head->next;
    if (!head) tail = nullptr;
  }
  //! Removes and returns the first record with this tag (messages of one tag match in order).
  Op* take(std::uint64_t tag) noexcept {
    Op* prev = nullptr;
    for (Op* op = head; op; prev = op, op = op->next) {
      if (op->tag != tag) continue;
      unlink(prev, op);
      return op;
    }
    return nullptr;
  }
  //! Removes `target` if it is queued; returns whether it was.
  bool remove(Op* target) noexcept {
    Op* prev = nullptr;
    for (Op* op = head; op; prev = op, op = op->next) {
      if (op != target) continue;
      unlink(prev, op);
      return true;
    }
    return false;
  }

 private:
  void unlink(Op* prev, Op* op) noexcept {
    (prev ? prev->next : head) = op->next;
    if (tail == op) tail = prev;
    op->next = nullptr;
  }
};

}  // namespace tutti::transport::detail
