//! @file window.hpp  transport::shm's one-sided memory (traits.one_sided): what algorithm::direct
//! builds on.
//!
//! Every rank's segment is mapped in every process, so a peer's staging buffers and registered
//! pool can be read in place; signal slots in each segment (window_flags) say when a step's data
//! is there and where. allocate() hands out blocks of this rank's registered pool (pool.hpp).
#pragma once
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/transport/shm/layout.hpp"
#include "tutti/transport/shm/liveness.hpp"
#include "tutti/transport/shm/pool.hpp"
#include "tutti/transport/shm/startup.hpp"

namespace tutti::transport::shm_detail {

class window {
 public:
  static constexpr std::size_t not_registered = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_payload = line;  //!< bytes signal() can carry

  window(mapped_job& job, liveness& live, std::size_t pool_bytes, bool debug_pool)
      : job_(job), live_(live), pool_(pool_bytes, debug_pool) {}
  window(const window&) = delete;
  window& operator=(const window&) = delete;

  //! Rank `r`'s segment as mapped in this process; offsets published with signals are relative to it.
  [[nodiscard]] std::byte* segment_base(int r) const noexcept { return job_.bases[static_cast<std::size_t>(r)]; }

  //! Rank `r`'s staging buffer `parity` (0 or 1), as mapped in this process.
  [[nodiscard]] std::byte* stage(int r, unsigned parity) const noexcept {
    return job_.bases[static_cast<std::size_t>(r)] + job_.geometry.stage_offset(parity & 1u);
  }
  [[nodiscard]] std::size_t stage_bytes() const noexcept { return job_.geometry.stage_bytes; }
  [[nodiscard]] std::size_t stage_offset(unsigned parity) const noexcept { return job_.geometry.stage_offset(parity & 1u); }

  //! Rank `r`'s registered region, as mapped in this process.
  [[nodiscard]] std::byte* pool(int r) const noexcept {
    return job_.bases[static_cast<std::size_t>(r)] + job_.geometry.pool_offset();
  }

  //! See shm::allocate.
  [[nodiscard]] void* allocate(std::size_t bytes) {
    std::size_t offset = 0;
    try {
      offset = pool_.allocate(bytes);
    } catch (const invalid_argument& e) {
      throw invalid_argument(on_rank(job_.job_rank(job_.rank)) + e.what());
    }
    std::byte* p = pool(job_.rank) + offset;
    if (pool_.debug()) protect(p, pool_.block_size(offset), PROT_READ | PROT_WRITE, "allocate");
    return p;
  }

  //! See shm::deallocate.
  void deallocate(void* p) {
    auto* b = static_cast<std::byte*>(p);
    std::byte* const mine = pool(job_.rank);
    const auto where = [&] {
      char text[40];
      std::snprintf(text, sizeof text, "%p", p);
      return on_rank(job_.job_rank(job_.rank)) + "transport::shm::deallocate(" + text + "): ";
    };
    if (b < mine || b >= mine + job_.geometry.pool_bytes)
      throw invalid_argument(where() + "this pointer is not in this rank's registered pool (it was not returned by "
                                       "allocate of this transport)");
    std::size_t size = 0;
    try {
      size = pool_.deallocate(static_cast<std::size_t>(b - mine));
    } catch (const invalid_argument& e) {
      throw invalid_argument(where() + e.what());
    }
    if (pool_.debug()) {
      std::memset(b, 0xDB, size);  // what a read through a kept pointer would see, were it allowed
      protect(b, size, PROT_NONE, "deallocate");
    }
  }

  //! Offset of [p, p + bytes) from this rank's segment base when it lies in memory handed out by
  //! allocate(), else not_registered.
  [[nodiscard]] std::size_t registered_offset(const void* p, std::size_t bytes) const noexcept {
    const auto* b = static_cast<const std::byte*>(p);
    const std::byte* base = pool(job_.rank);
    if (!b || b < base || b + bytes > base + job_.geometry.pool_bytes) return not_registered;
    const auto offset = static_cast<std::size_t>(b - base);
    return pool_.contains(offset, bytes) ? job_.geometry.pool_offset() + offset : not_registered;
  }

  //! A number that is the same on every rank for the same one-sided step (ranks take steps in order).
  [[nodiscard]] std::uint64_t next_epoch() noexcept { return ++epoch_; }

  //! Publishes `value` in this rank's signal `slot`, with an offset (slots 0, 1) and a payload of up
  //! to max_payload bytes (slot 0) that peers read once they have seen the value.
  void signal(unsigned slot, std::uint64_t value, std::uint64_t offset, const void* payload,
              std::size_t payload_bytes) noexcept {
    auto* f = job_.flags(job_.rank);
    if (slot == 0 && payload_bytes) std::memcpy(f->payload[value & 1], payload, std::min(payload_bytes, max_payload));
    if (slot < 2) f->offset[slot][value & 1].store(offset, std::memory_order_relaxed);
    f->value[slot].store(value, std::memory_order_release);
  }

  //! Rank r's slot-0 payload for epoch `value`; valid once wait_signal(r, 0, value) returned.
  [[nodiscard]] const std::byte* payload(int r, std::uint64_t value) const noexcept {
    return job_.flags(r)->payload[value & 1];
  }

  //! Waits until rank `r`'s signal `slot` reaches `value`; returns the offset published with it.
  std::uint64_t wait_signal(int r, unsigned slot, std::uint64_t value, deadline until) {
    auto* f = job_.flags(r);
    backoff b(job_.spin_rounds);
    while (f->value[slot].load(std::memory_order_acquire) < value) {
      if (b.check_clock()) {
        if (live_.gone(r, job_.header(r)) && f->value[slot].load(std::memory_order_acquire) < value) {
          job_.broken = on_rank(job_.job_rank(job_.rank)) + "waiting for rank " + job_.label(r) +
                        " in a one-sided step: rank " + job_.label(r) + " is gone (peer lost)";
          throw peer_lost(r, job_.broken);
        }
        if (until.passed()) {
          job_.broken = on_rank(job_.job_rank(job_.rank)) + "waiting for rank " + job_.label(r) +
                        " in a one-sided step did not complete before the deadline (TUTTI_TIMEOUT)";
          throw tutti::timeout(job_.broken);
        }
      }
      b.pause();
    }
    // Peers are at most one epoch apart, so the parity of `value` picks the right offset.
    return slot < 2 ? f->offset[slot][value & 1].load(std::memory_order_relaxed) : 0;
  }

 private:
  //! Debug pool: page protection of a block of this rank's pool (whole pages in that mode).
  void protect(std::byte* p, std::size_t bytes, int prot, const char* during) const {
    if (::mprotect(p, bytes, prot) != 0)
      throw transport_error(on_rank(job_.job_rank(job_.rank)) + "TUTTI_DEBUG_POOL: mprotect during " + during +
                            " failed: " + std::strerror(errno));
  }

  mapped_job& job_;
  liveness& live_;
  offset_pool pool_;         //!< our registered region's allocations
  std::uint64_t epoch_ = 0;  //!< one-sided steps taken; equal on all ranks between collectives
};

}  // namespace tutti::transport::shm_detail
