//! @file op_pool.hpp  What every transport's posting path shares: the fixed pool of operation records and the checks before posting.
//!
//! A posted send or receive needs a record that outlives the call (the request points at it, a
//! peer or UCX's callback writes into it). Records come from a fixed pool per transport, so
//! posting never allocates and a program that never waits is told so instead of growing without
//! bound; release() never allocates either (the free list's capacity is reserved), so it may run
//! inside a completion callback. The pool is neither copied nor moved: records' addresses are
//! handed out. Each transport keeps its own record type (what it needs to track differs).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"

namespace tutti::transport {

//! Posted but not yet completed requests per rank, in every transport (its max_outstanding).
inline constexpr std::size_t max_outstanding_ops = 1024;

template <class Op>
class op_pool {
 public:
  static constexpr std::size_t capacity = max_outstanding_ops;

  op_pool() : ops_(std::make_unique<Op[]>(capacity)) {
    free_.reserve(capacity);
    for (std::size_t i = capacity; i-- > 0;) free_.push_back(&ops_[i]);  // hands out ops_[0] first
  }
  op_pool(const op_pool&) = delete;
  op_pool& operator=(const op_pool&) = delete;

  //! A free record, or a transport_error naming the rank and the transport when all are in use.
  [[nodiscard]] Op* acquire(int rank, const char* transport) {
    if (free_.empty())
      throw transport_error(on_rank(rank) + "transport::" + transport + " has " +
                            std::to_string(capacity) + " requests outstanding; wait on some first");
    Op* op = free_.back();
    free_.pop_back();
    return op;
  }

  //! Returns a record acquired from this pool (never allocates: safe in completion callbacks).
  void release(Op* op) noexcept { free_.push_back(op); }

  [[nodiscard]] std::size_t outstanding() const noexcept { return capacity - free_.size(); }

  //! Every record, free or not (abort() withdraws the pending ones).
  template <class F>
  void for_each(F&& f) {
    for (std::size_t i = 0; i < capacity; ++i) f(ops_[i]);
  }

 private:
  std::unique_ptr<Op[]> ops_;
  std::vector<Op*> free_;
};

//! The check every transport makes before posting: `peer` must be a rank of the job.
inline void check_peer(int rank, const char* transport, bool is_send, int peer, int world_size) {
  if (peer < 0 || peer >= world_size)
    throw invalid_argument(on_rank(rank) + "transport::" + transport + " " +
                           (is_send ? "send to" : "recv from") + " peer " + std::to_string(peer) + " outside [0, " +
                           std::to_string(world_size) + ")");
}

}  // namespace tutti::transport
