//! @file transport.hpp  transport::shm — ranks are processes on one host, talking through
//! shared memory.
//!
//! The class composes its parts, one concern per file:
//! - options.hpp: ring geometry and pool size (TUTTI_SHM_*);
//! - startup.hpp: the job's segments, created, mapped by every rank, and unlinked at once;
//! - channel.hpp: send/recv/test/wait through one ring per pair of ranks, with no progress thread;
//! - liveness.hpp: whether a peer left (its flag) or died (its pidfd);
//! - activity.hpp: where the stall inspector posts what this rank is doing (activity_board.hpp);
//! - window.hpp: one-sided memory (staging buffers, registered pool, signals) for algorithm::direct;
//!   allocator.hpp and registered_buffer.hpp give the pool to containers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/transport/op_pool.hpp"
#include "tutti/transport/shm/activity.hpp"
#include "tutti/transport/shm/channel.hpp"
#include "tutti/transport/shm/layout.hpp"
#include "tutti/transport/shm/liveness.hpp"
#include "tutti/transport/shm/options.hpp"
#include "tutti/transport/shm/startup.hpp"
#include "tutti/transport/shm/window.hpp"

namespace tutti::transport {

class shm {
 public:
  using tutti_role = role::transport;
  static constexpr transport_traits traits{.intra_node = true, .device_memory = false, .one_sided = true};
  static constexpr const char* name = "shm";
  static constexpr std::size_t not_registered = shm_detail::window::not_registered;
  static constexpr std::size_t max_outstanding = max_outstanding_ops;
  static constexpr std::size_t max_payload = shm_detail::window::max_payload;  //!< bytes signal() can carry

  using request = shm_detail::channel::request;

  //! Joins the job described by `info` (its job_id names the segments). Blocks until every peer
  //! has created and mapped its segment, or throws timeout / peer_lost naming the missing peer.
  explicit shm(const rank_info& info, shm_options options = shm_options::from_env())
      : node_id_(info.node_id.empty() ? node_id_from_env() : info.node_id),
        job_(info.rank, info.world_size,
             shm_detail::layout{static_cast<std::size_t>(info.world_size), options.slots, options.slot_bytes,
                                options.stage_bytes, options.pool_bytes}),
        live_(info.world_size),
        channel_(job_, live_),
        window_(job_, live_, options.pool_bytes, options.debug_pool) {
    info.validate();
    shm_detail::check_job_id(job_, info.job_id);
    // More ranks on this host than cores we may run on: a waiting rank yields at once.
    job_.spin_rounds = outnumbered_cores(job_.world) ? 0 : backoff::default_spin_rounds;
    shm_detail::join(job_, live_, info.job_id, options.bootstrap_timeout);
  }

  //! Reads rank, world and job id from the launcher's environment (see rank_info_from_env).
  [[nodiscard]] static std::unique_ptr<shm> from_env() { return std::make_unique<shm>(rank_info_from_env()); }

  shm(const shm&) = delete;
  shm& operator=(const shm&) = delete;
  ~shm() { abort(); }

  [[nodiscard]] int rank() const noexcept { return job_.rank; }
  [[nodiscard]] int world_size() const noexcept { return job_.world; }
  //! The node this rank runs on (rank_info::node_id), for hierarchical algorithms' grouping.
  [[nodiscard]] const std::string& node_id() const noexcept { return node_id_; }

  //! From now on every message names rank r as `job_ranks[r]`: a node_aware job's node transport
  //! numbers the node's ranks by local index, and its errors reach users who know only job ranks.
  void name_ranks(std::vector<int> job_ranks) {
    if (job_ranks.size() != static_cast<std::size_t>(job_.world))
      throw invalid_argument(on_rank(job_.job_rank(job_.rank)) + "transport::shm::name_ranks: " +
                             std::to_string(job_ranks.size()) + " names for " + std::to_string(job_.world) + " ranks");
    job_.names = std::move(job_ranks);
  }

  // ---- two-sided (channel.hpp) --------------------------------------------------------------------
  [[nodiscard]] request send(int peer, std::uint64_t tag, const void* data, std::size_t bytes) {
    return channel_.send(peer, tag, data, bytes);
  }
  [[nodiscard]] request recv(int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    return channel_.recv(peer, tag, data, bytes);
  }
  [[nodiscard]] request recv_up_to(int peer, std::uint64_t tag, void* data, std::size_t capacity, std::size_t* arrived) {
    return channel_.recv_up_to(peer, tag, data, capacity, arrived);
  }
  [[nodiscard]] bool test(request& r) { return channel_.test(r); }
  void wait(request& r, deadline until) { channel_.wait(r, until); }

  //! Moves every queued operation along without waiting (a composite transport calls this while
  //! it waits on its other half, so this rank's sends keep flowing to the peers that wait on them).
  void progress() { channel_.progress(); }

  //! Fails every queued operation, raises this rank's "gone" flag so that peers waiting on it get
  //! peer_lost, and leaves the transport unusable. Only this process ever touches the user buffers
  //! of its operations, so nothing can write into them afterwards.
  void abort() noexcept {
    shm_detail::liveness::leave(job_.header(job_.rank));
    if (job_.broken.empty()) job_.broken = on_rank(job_.job_rank(job_.rank)) + "transport::shm was aborted";
    channel_.fail_all();
  }

  //! Where the communicator's stall inspector posts and reads (activity.hpp: this job's segments).
  [[nodiscard]] transport::activity_board& activity_board() noexcept { return board_; }

  // ---- one-sided capability (traits.one_sided; window.hpp): what algorithm::direct builds on -----

  //! Rank `r`'s segment as mapped in this process; offsets published with signals are relative to it.
  [[nodiscard]] std::byte* segment_base(int r) const noexcept { return window_.segment_base(r); }
  //! Rank `r`'s staging buffer `parity` (0 or 1), as mapped in this process.
  [[nodiscard]] std::byte* stage(int r, unsigned parity) const noexcept { return window_.stage(r, parity); }
  [[nodiscard]] std::size_t stage_bytes() const noexcept { return window_.stage_bytes(); }
  [[nodiscard]] std::size_t stage_offset(unsigned parity) const noexcept { return window_.stage_offset(parity); }
  //! Rank `r`'s registered region, as mapped in this process.
  [[nodiscard]] std::byte* pool(int r) const noexcept { return window_.pool(r); }

  //! Memory in this rank's registered region: peers can read it without a copy. Throws
  //! invalid_argument when the pool (TUTTI_SHM_POOL_BYTES) has no block that large. Prefer
  //! registered_buffer<T> (registered_buffer.hpp), which gives the block back by itself.
  [[nodiscard]] void* allocate(std::size_t bytes) { return window_.allocate(bytes); }
  //! Gives back a block from allocate(). A pointer that is not one (double free, a pointer into
  //! the middle of a block, a foreign pointer) is an invalid_argument naming the rank and pointer.
  void deallocate(void* p) { window_.deallocate(p); }
  //! Offset of [p, p + bytes) from this rank's segment base when it lies in memory handed out by
  //! allocate(), else not_registered.
  [[nodiscard]] std::size_t registered_offset(const void* p, std::size_t bytes) const noexcept {
    return window_.registered_offset(p, bytes);
  }

  //! A number that is the same on every rank for the same one-sided step (ranks take steps in order).
  [[nodiscard]] std::uint64_t next_epoch() noexcept { return window_.next_epoch(); }
  //! Publishes `value` in this rank's signal `slot`, with an offset (slots 0, 1) and a payload of up
  //! to max_payload bytes (slot 0) that peers read once they have seen the value.
  void signal(unsigned slot, std::uint64_t value, std::uint64_t offset = 0, const void* payload = nullptr,
              std::size_t payload_bytes = 0) noexcept {
    window_.signal(slot, value, offset, payload, payload_bytes);
  }
  //! Rank r's slot-0 payload for epoch `value`; valid once wait_signal(r, 0, value) returned.
  [[nodiscard]] const std::byte* payload(int r, std::uint64_t value) const noexcept { return window_.payload(r, value); }
  //! Waits until rank `r`'s signal `slot` reaches `value`; returns the offset published with it.
  std::uint64_t wait_signal(int r, unsigned slot, std::uint64_t value, deadline until) {
    return window_.wait_signal(r, slot, value, until);
  }

 private:
  std::string node_id_;
  shm_detail::mapped_job job_;
  shm_detail::liveness live_;
  shm_detail::channel channel_;
  shm_detail::window window_;
  shm_detail::activity_board board_{job_};
};

static_assert(transport_policy<shm>, "transport::shm must satisfy tutti::transport_policy");
static_assert(one_sided_transport<shm>, "transport::shm must satisfy tutti::one_sided_transport");

}  // namespace tutti::transport
