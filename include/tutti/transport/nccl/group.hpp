//! @file group.hpp  Cutting a run of NCCL sends and receives into group calls NCCL accepts.
//!
//! NCCL takes at most 2048 operations between ncclGroupStart and ncclGroupEnd ("There is a maximum
//! of 2048 NCCL operations that can be inserted between the ncclGroupStart and ncclGroupEnd calls.
//! If this limit is exceeded, then a warning message will be emitted and the NCCL operation will
//! return a failure code": NCCL user guide, api/group.html, 2.9.8 to 2.11.4; the constant is
//! NCCL_MAX_OPS = 2048 in NCCL's src/include/device.h, still so in the 2.28 sources). Later guides
//! dropped the sentence, and NCCL 2.28 takes any number (NCCL_MAX_OPS only sizes pools there).
//!
//! transport::nccl therefore never cuts (it passes the run's length as the limit): a cut is each
//! rank's own, and the balanced cut below does not keep a pair in the same group on both sides
//! (rank a's group 1 may hold its pair with b while b's group 1 does not), so mirrored runs over
//! more than limit / 2 peers wait in a cycle (group_test.cpp simulates it). The splitter stays for
//! its tests and for an NCCL that would enforce a limit again.
//!
//! Where the cut falls matters. Groups run one after another on the stream, so a receive in this
//! rank's first group whose matching send the peer put in its second group, behind a receive that
//! waits for our second group, deadlocks. Ranks exchanging with each other post mirrored runs
//! ([recv p, send p] on both sides); cutting only where every peer has as many sends as receives
//! behind it keeps each such pair together on each side, though not in the same group number on
//! both (above). Only when no such point exists within the limit is a run cut at the limit itself.
#pragma once
#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace tutti::transport {

namespace nccl_detail {

//! Operations per ncclGroupStart/ncclGroupEnd (see the top of this file).
inline constexpr std::size_t max_ops_per_group = 2048;

//! One queued point-to-point operation: ncclSend or ncclRecv of `bytes` bytes with `peer`.
struct p2p_op {
  bool is_send = false;
  int peer = -1;
  void* data = nullptr;  //!< const for a send (NCCL's signature takes const void*)
  std::size_t bytes = 0;
};

//! [first, first + count) of a run of operations: one group call.
struct group_span {
  std::size_t first = 0;
  std::size_t count = 0;
  friend bool operator==(const group_span&, const group_span&) = default;
};

//! Cuts runs into groups; keeps its scratch, so a transport's flushes allocate nothing once warm.
class group_splitter {
 public:
  //! Groups of at most `limit` (> 0) operations, in order, covering ops: a rest that fits is one
  //! group; otherwise a group ends at the last point within the limit where every peer's sends
  //! and receives since its start balance, or at the limit when there is none. `world_size`
  //! bounds the peers.
  const std::vector<group_span>& split(std::span<const p2p_op> ops, int world_size,
                                       std::size_t limit = max_ops_per_group) {
    groups_.clear();
    balance_.assign(static_cast<std::size_t>(std::max(world_size, 0)), 0);
    std::size_t first = 0;
    while (first < ops.size()) {
      const std::size_t end = std::min(ops.size(), first + limit);
      std::size_t cut = 0;  // the last balanced end in (first, end], 0 when none
      int unbalanced = 0;   // peers whose sends and receives since `first` differ
      for (std::size_t i = first; i < end; ++i) {
        int& b = balance_[static_cast<std::size_t>(ops[i].peer)];
        const int before = b;
        b += ops[i].is_send ? 1 : -1;
        unbalanced += (before == 0) - (b == 0);
        if (unbalanced == 0) cut = i + 1;
      }
      if (end == ops.size() || cut == 0) cut = end;  // the rest fits whole, or no balanced point
      for (std::size_t i = first; i < end; ++i) balance_[static_cast<std::size_t>(ops[i].peer)] = 0;
      groups_.push_back({first, cut - first});
      first = cut;
    }
    return groups_;
  }

 private:
  std::vector<group_span> groups_;
  std::vector<int> balance_;  //!< per peer: sends minus receives in the group being cut
};

}  // namespace nccl_detail

}  // namespace tutti::transport
