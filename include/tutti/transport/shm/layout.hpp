//! @file layout.hpp  What lives in a rank's segment: its header and one inbound channel per peer.
//!
//! Rank r's segment holds, for every sender s, a ring of fixed-size slots that only s writes and
//! only r reads (single producer, single consumer: no locks, one release store per fragment).
//! A message is cut into slot-sized fragments, so large messages pipeline through the ring while
//! small ones cost one slot. The receiver publishes how many fragments it consumed; the sender
//! reuses a slot only after that.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tutti::transport::shm_detail {

inline constexpr std::uint64_t segment_magic = 0x336d737474747574ull;  // "tuttsm3": the layout's version
inline constexpr std::size_t line = 64;

//! What the stall inspector posts about this rank (shm/activity.hpp): a seqlock over 8-byte words
//! (odd `version` while the owner writes), so readers never see half a record.
struct alignas(line) activity_area {
  static constexpr std::size_t words = 56;  //!< the first holds the length: 440 bytes of record
  std::atomic<std::uint64_t> version;
  std::atomic<std::uint64_t> word[words];
};

//! The job's stall verdict, in rank 0's segment: `state` 0 none, 1 being written, 2 written.
struct alignas(line) verdict_area {
  static constexpr std::size_t words = 502;  //!< the first holds the length: 4000 bytes of text
  std::atomic<std::uint32_t> state;
  std::atomic<std::uint64_t> word[words];
};

struct alignas(line) segment_header {
  std::atomic<std::uint64_t> magic;  //!< written last by the creator: the segment is initialised
  std::uint32_t world_size;
  std::uint32_t rank;
  std::int32_t pid;                  //!< the owner, for liveness checks
  std::uint32_t slots;               //!< slots per channel
  std::uint64_t slot_bytes;          //!< payload bytes per slot
  std::uint64_t stage_bytes;         //!< each staging buffer
  std::uint64_t pool_bytes;          //!< registered region
  alignas(line) std::atomic<std::uint32_t> attached;  //!< peers that have mapped this segment
  std::atomic<std::uint32_t> mapped_all;              //!< the owner has mapped (and counted itself in) every peer's
  alignas(line) std::atomic<std::uint32_t> gone;      //!< the owner left or aborted
  activity_area activity;
  verdict_area verdict;
};

//! Consumer-side progress of one channel, in the receiver's segment.
struct alignas(line) channel_control {
  std::atomic<std::uint64_t> consumed;  //!< fragments the receiver has taken out
};

//! Precedes each slot's payload. `seq` is the fragment's sequence number + 1 once the slot is full.
struct alignas(line) slot_header {
  std::atomic<std::uint64_t> seq;
  std::uint64_t tag;
  std::uint64_t message_bytes;  //!< the whole message's size (every fragment carries it)
  std::uint32_t bytes;          //!< this fragment's payload
  std::uint32_t first;          //!< 1 on the first fragment of a message
};

//! The one-sided part of a segment: flags peers poll, then the staging buffers and the pool of
//! registered memory that peers read directly.
struct alignas(line) window_flags {
  std::atomic<std::uint64_t> value[4];  //!< signal slots, each a monotonically rising epoch
  //! Where this rank's data for an epoch lives, for signal slots 0 and 1, by epoch parity: a peer
  //! one epoch behind must still find the previous epoch's offset.
  std::atomic<std::uint64_t> offset[2][2];
  //! A small message published with signal slot 0, by epoch parity (the collective's descriptor,
  //! so ranks can check they agree without a round of their own).
  alignas(line) std::byte payload[2][line];
};

//! Byte offsets inside a segment, identical in every rank of a job.
struct layout {
  std::size_t world_size;
  std::size_t slots;
  std::size_t slot_bytes;
  std::size_t stage_bytes = 0;  //!< each of the two staging buffers
  std::size_t pool_bytes = 0;   //!< registered memory handed out by the allocator

  [[nodiscard]] std::size_t slot_stride() const noexcept { return sizeof(slot_header) + slot_bytes; }
  [[nodiscard]] std::size_t control_offset(std::size_t sender) const noexcept {
    return sizeof(segment_header) + sender * sizeof(channel_control);
  }
  [[nodiscard]] std::size_t ring_offset(std::size_t sender) const noexcept {
    return sizeof(segment_header) + world_size * sizeof(channel_control) + sender * slots * slot_stride();
  }
  [[nodiscard]] std::size_t flags_offset() const noexcept { return ring_offset(world_size); }
  [[nodiscard]] std::size_t stage_offset(std::size_t parity) const noexcept {
    return flags_offset() + sizeof(window_flags) + parity * stage_bytes;
  }
  [[nodiscard]] std::size_t pool_offset() const noexcept {
    return (stage_offset(2) + 4095) & ~std::size_t{4095};  // page-aligned, as users expect of big buffers
  }
  [[nodiscard]] std::size_t total_bytes() const noexcept { return pool_offset() + pool_bytes; }
};

}  // namespace tutti::transport::shm_detail
