//! @file operation.hpp  The record every transport keeps of a posted send or receive, and the words
//! its errors use for one.
//!
//! shm, ucx, inproc and nccl each extend this record with what their progress needs (ring
//! position, UCX request, matching queue link, group number); node_aware's request carries it to
//! name a side's operation in its deadline message. What they share is kept here once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tutti::transport::detail {

//! Where a record stands, for the transports whose operations are simply pending then finished
//! (shm, ucx, inproc); nccl's queue adds queued and posted (nccl/channel.hpp).
enum op_status : int { op_free = 0, op_pending = 1, op_done = 2, op_failed = 3 };

//! What was posted: direction, peer, tag and size.
struct operation {
  bool is_send = false;
  int peer = -1;
  std::uint64_t tag = 0;
  std::size_t bytes = 0;
  //! A receive posted by recv_up_to: a message of at most `bytes` matches, its size is written
  //! here (nullptr: recv, the size must be `bytes`).
  std::size_t* arrived_out = nullptr;

  //! Records what is being posted; the rest of the record is the transport's to reset.
  void posting(bool send, int to, std::uint64_t with_tag, std::size_t size) noexcept {
    is_send = send;
    peer = to;
    tag = with_tag;
    bytes = size;
    arrived_out = nullptr;
  }

  //! Whether a receive of this record takes a message of `size` bytes (and records the size).
  [[nodiscard]] bool takes(std::size_t size) noexcept {
    if (size == bytes) {
      if (arrived_out) *arrived_out = size;
      return true;
    }
    if (!arrived_out || size > bytes) return false;
    *arrived_out = size;
    bytes = size;  // what moves, and what its messages say, from here on
    return true;
  }
};

//! "send of 8 bytes to rank 3" / "receive of 8 bytes from rank 3"; `peer` is how the transport
//! names the peer (shm names job ranks inside a node_aware job).
[[nodiscard]] inline std::string op_text(const operation& op, std::string_view peer) {
  std::string s = op.is_send ? "send of " : "receive of ";
  s += std::to_string(op.bytes);
  s += op.is_send ? " bytes to rank " : " bytes from rank ";
  s += peer;
  return s;
}

//! op_text with the tag: "send of 8 bytes to rank 3 with tag 7" (the transports that match or
//! order by tag across several streams say which one).
[[nodiscard]] inline std::string op_text_with_tag(const operation& op) {
  return op_text(op, std::to_string(op.peer)) + " with tag " + std::to_string(op.tag);
}

}  // namespace tutti::transport::detail
