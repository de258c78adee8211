//! @file transport.hpp  transport::shm — ranks are processes on one host, talking through
//! shared memory.
//!
//! Bootstrap: each rank creates its own segment (/dev/shm/tutti-<job>.<rank>, mode 0600) holding
//! one inbound ring per peer, maps every peer's segment, and unlinks its own name as soon as all
//! peers have mapped it. From then on nothing is left in /dev/shm, whatever happens to the job.
//!
//! Progress: send/recv only queue an operation; test/wait drive every queued operation of this
//! rank (copy fragments into peers' rings, drain fragments out of ours), so a rank waiting on a
//! receive still pushes its own sends and no progress thread is needed. Waits spin, then yield,
//! then sleep, and check the peer's liveness (its "gone" flag, and a pidfd that becomes readable
//! when the process dies) so a killed peer is reported within milliseconds.
#pragma once
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/transport/op_pool.hpp"
#include "tutti/transport/request_handle.hpp"
#include "tutti/transport/shm/layout.hpp"
#include "tutti/transport/shm/pool.hpp"
#include "tutti/transport/shm/segment.hpp"

namespace tutti::transport {

//! Ring geometry; every rank of a job must use the same (checked at bootstrap).
struct shm_options {
  std::size_t slots = 16;                //!< TUTTI_SHM_SLOTS: fragments in flight per pair of ranks
  std::size_t slot_bytes = 64 << 10;     //!< TUTTI_SHM_SLOT_BYTES: fragment size
  std::size_t stage_bytes = 1 << 20;     //!< TUTTI_SHM_STAGE_BYTES: each of two staging buffers (one-sided algorithms)
  std::size_t pool_bytes = 256 << 20;    //!< TUTTI_SHM_POOL_BYTES: registered memory for allocate() (tmpfs, used lazily)
  bool debug_pool = false;               //!< TUTTI_DEBUG_POOL: poison and protect freed blocks (pool.hpp)
  std::chrono::nanoseconds bootstrap_timeout = std::chrono::seconds(300);  //!< TUTTI_TIMEOUT

  [[nodiscard]] static shm_options from_env() {
    shm_options o;
    o.slots = static_cast<std::size_t>(config::integer("TUTTI_SHM_SLOTS", static_cast<long long>(o.slots), 2, 4096));
    o.slot_bytes = config::bytes("TUTTI_SHM_SLOT_BYTES", o.slot_bytes, 64, std::size_t{64} << 20);
    o.slot_bytes = (o.slot_bytes + 63) & ~std::size_t{63};
    o.stage_bytes = (config::bytes("TUTTI_SHM_STAGE_BYTES", o.stage_bytes, 4096, std::size_t{1} << 32) + 63) & ~std::size_t{63};
    o.pool_bytes = (config::bytes("TUTTI_SHM_POOL_BYTES", o.pool_bytes, 0, std::size_t{1} << 40) + 4095) & ~std::size_t{4095};
    o.debug_pool = config::flag("TUTTI_DEBUG_POOL", false);
    o.bootstrap_timeout = config::timeout();
    return o;
  }
};

class shm {
 public:
  using tutti_role = role::transport;
  static constexpr transport_traits traits{.intra_node = true, .device_memory = false, .one_sided = true};
  static constexpr const char* name = "shm";
  static constexpr std::size_t not_registered = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_outstanding = max_outstanding_ops;

 private:
  enum status : int { op_free, op_pending, op_done, op_failed };
  struct op_state {
    int status = op_free;
    bool is_send = false;
    bool started = false;  //!< first fragment written / read
    int peer = -1;
    std::uint64_t tag = 0;
    const std::byte* src = nullptr;
    std::byte* dst = nullptr;
    std::size_t bytes = 0;
    std::size_t done = 0;  //!< payload bytes moved so far
    op_state* next = nullptr;
    std::string failure;
  };
  struct op_queue {
    op_state* head = nullptr;
    op_state* tail = nullptr;
    void push(op_state* op) noexcept {
      op->next = nullptr;
      (tail ? tail->next : head) = op;
      tail = op;
    }
    void pop() noexcept {
      head = head->next;
      if (!head) tail = nullptr;
    }
  };

 public:
  using request = request_handle<op_state>;

  //! Joins the job described by `info` (its job_id names the segments). Blocks until every peer
  //! has created and mapped its segment, or throws timeout / peer_lost naming the missing peer.
  explicit shm(const rank_info& info, shm_options options = shm_options::from_env())
      : rank_(info.rank),
        node_id_(info.node_id.empty() ? node_id_from_env() : info.node_id),
        world_(info.world_size),
        layout_{static_cast<std::size_t>(info.world_size), options.slots, options.slot_bytes, options.stage_bytes,
                options.pool_bytes},
        bases_(static_cast<std::size_t>(info.world_size), nullptr),
        peers_(static_cast<std::size_t>(info.world_size)),
        pidfds_(static_cast<std::size_t>(info.world_size), -1),
        next_liveness_check_(static_cast<std::size_t>(info.world_size)),
        produced_(static_cast<std::size_t>(info.world_size), 0),
        expected_(static_cast<std::size_t>(info.world_size), 0),
        sends_(static_cast<std::size_t>(info.world_size)),
        recvs_(static_cast<std::size_t>(info.world_size)),
        pool_(options.pool_bytes, options.debug_pool) {
    info.validate();
    if (info.job_id.empty())
      throw invalid_argument("rank " + label(rank_) +
                             ": transport::shm needs a job id (TUTTI_JOB_ID, set by tutti-run) to name its segments");
    for (char c : info.job_id)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'))
        throw invalid_argument("rank " + label(rank_) + ": job id '" + info.job_id +
                               "' may only hold letters, digits, '-' and '_'");
    // More ranks on this host than cores we may run on: a waiting rank yields at once.
    cpu_set_t cpus;
    const int usable = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    spin_rounds_ = world_ > usable ? 0 : backoff::default_spin_rounds;
    bootstrap(info.job_id, options.bootstrap_timeout);
  }

  //! Reads rank, world and job id from the launcher's environment (see rank_info_from_env).
  [[nodiscard]] static std::unique_ptr<shm> from_env() { return std::make_unique<shm>(rank_info_from_env()); }

  shm(const shm&) = delete;
  shm& operator=(const shm&) = delete;

  ~shm() {
    abort();
    for (int fd : pidfds_)
      if (fd >= 0) ::close(fd);
  }

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int world_size() const noexcept { return world_; }
  //! The node this rank runs on (rank_info::node_id), for hierarchical algorithms' grouping.
  [[nodiscard]] const std::string& node_id() const noexcept { return node_id_; }

  //! From now on every message names rank r as `job_ranks[r]`: a node_aware job's node transport
  //! numbers the node's ranks by local index, and its errors reach users who know only job ranks.
  void name_ranks(std::vector<int> job_ranks) {
    if (job_ranks.size() != static_cast<std::size_t>(world_))
      throw invalid_argument("rank " + label(rank_) + ": transport::shm::name_ranks: " + std::to_string(job_ranks.size()) +
                             " names for " + std::to_string(world_) + " ranks");
    names_ = std::move(job_ranks);
  }

  [[nodiscard]] request send(int peer, std::uint64_t tag, const void* data, std::size_t bytes) {
    op_state* op = acquire(peer, tag, bytes, true);
    op->src = static_cast<const std::byte*>(data);
    sends_[static_cast<std::size_t>(peer)].push(op);
    push(peer);  // small messages usually complete right here
    return request(op);
  }

  [[nodiscard]] request recv(int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    op_state* op = acquire(peer, tag, bytes, false);
    op->dst = static_cast<std::byte*>(data);
    recvs_[static_cast<std::size_t>(peer)].push(op);
    pull(peer);
    return request(op);
  }

  [[nodiscard]] bool test(request& r) {
    if (!r.op) return true;
    progress();
    if (r.op->status == op_pending) {
      if (!peer_gone(r.op->peer)) return false;
      // A peer may send its last message and exit between the progress() above and the liveness
      // check: what it sent is still in our rings, so look once more before calling it lost (as
      // wait() does). Without this a peer that finished first failed a slower rank's last receive.
      progress();
      if (r.op->status == op_pending) lost(r);
    }
    finish(r);
    return true;
  }

  void wait(request& r, deadline until) {
    if (!r.op) return;
    backoff b(spin_rounds_);
    for (;;) {
      progress();
      if (r.op->status != op_pending) return finish(r);
      if (b.check_clock()) {
        if (peer_gone(r.op->peer)) {
          progress();  // what the peer sent before leaving is still in our rings
          if (r.op->status != op_pending) return finish(r);
          lost(r);
        }
        if (until.passed()) {
          const std::string what = describe(*r.op) + " did not complete before the deadline (TUTTI_TIMEOUT)";
          broken_ = what;  // a half-moved message leaves the stream unusable
          throw timeout(what);
        }
      }
      b.pause();
    }
  }

  //! Moves every queued operation along without waiting (a composite transport calls this while
  //! it waits on its other half, so this rank's sends keep flowing to the peers that wait on them).
  void progress() {
    for (int p = 0; p < world_; ++p) {
      if (sends_[static_cast<std::size_t>(p)].head) push(p);
      if (recvs_[static_cast<std::size_t>(p)].head) pull(p);
    }
  }

  //! Fails every queued operation, raises this rank's "gone" flag so that peers waiting on it get
  //! peer_lost, and leaves the transport unusable. Only this process ever touches the user buffers
  //! of its operations, so nothing can write into them afterwards.
  void abort() noexcept {
    if (auto* h = header(rank_)) h->gone.store(1, std::memory_order_release);
    if (broken_.empty()) broken_ = "rank " + label(rank_) + ": transport::shm was aborted";
    for (auto* queues : {&sends_, &recvs_}) {
      for (auto& q : *queues) {
        while (q.head) {
          q.head->failure = broken_;
          q.head->status = op_failed;
          q.pop();
        }
      }
    }
  }

 // ---- one-sided capability (traits.one_sided): what algorithm::direct builds on ----------------

  //! Rank `r`'s segment as mapped in this process; offsets published with signals are relative to it.
  [[nodiscard]] std::byte* segment_base(int r) const noexcept { return bases_[static_cast<std::size_t>(r)]; }

  //! Rank `r`'s staging buffer `parity` (0 or 1), as mapped in this process.
  [[nodiscard]] std::byte* stage(int r, unsigned parity) const noexcept {
    return bases_[static_cast<std::size_t>(r)] + layout_.stage_offset(parity & 1u);
  }
  [[nodiscard]] std::size_t stage_bytes() const noexcept { return layout_.stage_bytes; }

  //! Rank `r`'s registered region, as mapped in this process.
  [[nodiscard]] std::byte* pool(int r) const noexcept { return bases_[static_cast<std::size_t>(r)] + layout_.pool_offset(); }

  //! Memory in this rank's registered region: peers can read it without a copy. Throws
  //! invalid_argument when the pool (TUTTI_SHM_POOL_BYTES) has no block that large. Prefer
  //! registered_buffer<T> (registered_buffer.hpp), which gives the block back by itself.
  [[nodiscard]] void* allocate(std::size_t bytes) {
    std::size_t offset = 0;
    try {
      offset = pool_.allocate(bytes);
    } catch (const invalid_argument& e) {
      throw invalid_argument("rank " + label(rank_) + ": " + e.what());
    }
    std::byte* p = pool(rank_) + offset;
    if (pool_.debug()) protect(p, pool_.block_size(offset), PROT_READ | PROT_WRITE, "allocate");
    return p;
  }
  //! Gives back a block from allocate(). A pointer that is not one (double free, a pointer into
  //! the middle of a block, a foreign pointer) is an invalid_argument naming the rank and pointer.
  void deallocate(void* p) {
    auto* b = static_cast<std::byte*>(p);
    const auto where = [&] {
      char text[40];
      std::snprintf(text, sizeof text, "%p", p);
      return "rank " + label(rank_) + ": transport::shm::deallocate(" + text + "): ";
    };
    if (b < pool(rank_) || b >= pool(rank_) + layout_.pool_bytes)
      throw invalid_argument(where() + "this pointer is not in this rank's registered pool (it was not returned by "
                                       "allocate of this transport)");
    std::size_t size = 0;
    try {
      size = pool_.deallocate(static_cast<std::size_t>(b - pool(rank_)));
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
    const std::byte* base = pool(rank_);
    if (!b || b < base || b + bytes > base + layout_.pool_bytes) return not_registered;
    const auto offset = static_cast<std::size_t>(b - base);
    return pool_.contains(offset, bytes) ? layout_.pool_offset() + offset : not_registered;
  }
  [[nodiscard]] std::size_t stage_offset(unsigned parity) const noexcept { return layout_.stage_offset(parity & 1u); }

  //! A number that is the same on every rank for the same one-sided step (ranks take steps in order).
  [[nodiscard]] std::uint64_t next_epoch() noexcept { return ++epoch_; }

  static constexpr std::size_t max_payload = shm_detail::line;  //!< bytes signal() can carry

  //! Publishes `value` in this rank's signal `slot`, with an offset (slots 0, 1) and a payload of up
  //! to max_payload bytes (slot 0) that peers read once they have seen the value.
  void signal(unsigned slot, std::uint64_t value, std::uint64_t offset = 0, const void* payload = nullptr,
              std::size_t payload_bytes = 0) noexcept {
    auto* f = flags(rank_);
    if (slot == 0 && payload_bytes) std::memcpy(f->payload[value & 1], payload, std::min(payload_bytes, max_payload));
    if (slot < 2) f->offset[slot][value & 1].store(offset, std::memory_order_relaxed);
    f->value[slot].store(value, std::memory_order_release);
  }

  //! Rank r's slot-0 payload for epoch `value`; valid once wait_signal(r, 0, value) returned.
  [[nodiscard]] const std::byte* payload(int r, std::uint64_t value) const noexcept { return flags(r)->payload[value & 1]; }

  //! Waits until rank `r`'s signal `slot` reaches `value`; returns the offset published with it.
  std::uint64_t wait_signal(int r, unsigned slot, std::uint64_t value, deadline until) {
    auto* f = flags(r);
    backoff b(spin_rounds_);
    while (f->value[slot].load(std::memory_order_acquire) < value) {
      if (b.check_clock()) {
        if (peer_gone(r) && f->value[slot].load(std::memory_order_acquire) < value) {
          broken_ = "rank " + label(rank_) + ": waiting for rank " + label(r) +
                    " in a one-sided step: rank " + label(r) + " is gone (peer lost)";
          throw peer_lost(r, broken_);
        }
        if (until.passed()) {
          broken_ = "rank " + label(rank_) + ": waiting for rank " + label(r) +
                    " in a one-sided step did not complete before the deadline (TUTTI_TIMEOUT)";
          throw tutti::timeout(broken_);
        }
      }
      b.pause();
    }
    // Peers are at most one epoch apart, so the parity of `value` picks the right offset.
    return slot < 2 ? f->offset[slot][value & 1].load(std::memory_order_relaxed) : 0;
  }

 private:
  shm_detail::window_flags* flags(int r) const noexcept {
    return reinterpret_cast<shm_detail::window_flags*>(bases_[static_cast<std::size_t>(r)] + layout_.flags_offset());
  }

  static std::string segment_name(const std::string& job, int rank) {
    return "/tutti-" + job + "." + std::to_string(rank);  // "." cannot occur in a job id
  }

  shm_detail::segment_header* header(int r) const noexcept {
    return bases_.empty() || !bases_[static_cast<std::size_t>(r)]
               ? nullptr
               : reinterpret_cast<shm_detail::segment_header*>(bases_[static_cast<std::size_t>(r)]);
  }
  shm_detail::channel_control* control(std::byte* base, int sender) const noexcept {
    return reinterpret_cast<shm_detail::channel_control*>(base + layout_.control_offset(static_cast<std::size_t>(sender)));
  }
  shm_detail::slot_header* slot(std::byte* base, int sender, std::uint64_t seq) const noexcept {
    return reinterpret_cast<shm_detail::slot_header*>(base + layout_.ring_offset(static_cast<std::size_t>(sender)) +
                                                      (seq % layout_.slots) * layout_.slot_stride());
  }

  void bootstrap(const std::string& job, std::chrono::nanoseconds time_limit) {
    using namespace shm_detail;
    const auto until = deadline::after(time_limit);
    own_ = segment::create(segment_name(job, rank_), layout_.total_bytes());
    std::byte* base = own_.data();
    // Construct the shared objects; peers see them only after the magic's release store.
    auto* h = new (base) segment_header{};
    h->world_size = static_cast<std::uint32_t>(world_);
    h->rank = static_cast<std::uint32_t>(rank_);
    h->pid = static_cast<std::int32_t>(::getpid());
    h->slots = static_cast<std::uint32_t>(layout_.slots);
    h->slot_bytes = layout_.slot_bytes;
    new (base + layout_.flags_offset()) window_flags{};
    h->stage_bytes = layout_.stage_bytes;
    h->pool_bytes = layout_.pool_bytes;
    for (int s = 0; s < world_; ++s) {
      new (control(base, s)) channel_control{};
      for (std::size_t k = 0; k < layout_.slots; ++k) new (slot(base, s, k)) slot_header{};
    }
    bases_[static_cast<std::size_t>(rank_)] = base;
    h->magic.store(segment_magic, std::memory_order_release);

    for (int p = 0; p < world_; ++p) {
      if (p == rank_) continue;
      segment seg;
      for (;;) {
        seg = segment::try_open(segment_name(job, p), sizeof(segment_header));
        if (seg && reinterpret_cast<segment_header*>(seg.data())->magic.load(std::memory_order_acquire) == segment_magic)
          break;
        seg = segment{};
        if (until.passed())
          throw tutti::timeout("rank " + label(rank_) + ": transport::shm: rank " + label(p) +
                        " did not create its segment /dev/shm" + segment_name(job, p) +
                        " before the deadline (is it running, with the same TUTTI_JOB_ID and world size?)");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      const auto* ph = reinterpret_cast<segment_header*>(seg.data());
      if (ph->world_size != static_cast<std::uint32_t>(world_) || ph->slots != layout_.slots ||
          ph->slot_bytes != layout_.slot_bytes || ph->stage_bytes != layout_.stage_bytes ||
          ph->pool_bytes != layout_.pool_bytes || seg.size() < layout_.total_bytes())
        throw invalid_argument("rank " + label(rank_) + ": transport::shm: rank " + label(p) +
                               " has world_size " + std::to_string(ph->world_size) + ", " + std::to_string(ph->slots) +
                               " slots of " + std::to_string(ph->slot_bytes) + " bytes; this rank has " +
                               std::to_string(world_) + ", " + std::to_string(layout_.slots) + " of " +
                               std::to_string(layout_.slot_bytes) +
                               " (TUTTI_SHM_* settings, including stage and pool sizes, must match on all ranks)");
      pidfds_[static_cast<std::size_t>(p)] = static_cast<int>(::syscall(SYS_pidfd_open, ph->pid, 0));
      bases_[static_cast<std::size_t>(p)] = seg.data();
      peers_[static_cast<std::size_t>(p)] = std::move(seg);
      header(p)->attached.fetch_add(1, std::memory_order_acq_rel);
    }
    h->mapped_all.store(1, std::memory_order_release);
    // Once every peer has mapped our segment its name is no longer needed: unlinking it now means
    // no crash, however abrupt, can leave it behind. A peer that is gone but had mapped everything
    // has counted itself in here already: it finished starting and left (construction returns as
    // soon as this loop ends), which is not a failed start.
    backoff b(spin_rounds_);
    while (h->attached.load(std::memory_order_acquire) < static_cast<std::uint32_t>(world_ - 1)) {
      for (int p = 0; p < world_; ++p)
        // gone first: its flag is raised after mapped_all, so seeing it means seeing mapped_all
        if (p != rank_ && peer_gone(p) && !header(p)->mapped_all.load(std::memory_order_acquire))
          throw peer_lost(p, "rank " + label(rank_) + ": transport::shm: rank " + label(p) +
                                 " died while the job was starting");
      if (until.passed())
        throw tutti::timeout("rank " + label(rank_) + ": transport::shm: only " +
                      std::to_string(h->attached.load()) + " of " + std::to_string(world_ - 1) +
                      " peers attached before the deadline");
      b.pause();
    }
    own_.unlink();
  }

  //! Whether `peer` left (its flag) or died (its pidfd is readable; checked at most every 2 ms).
  bool peer_gone(int peer) {
    auto* h = header(peer);
    if (h && h->gone.load(std::memory_order_acquire)) return true;
    const auto now = std::chrono::steady_clock::now();
    auto& next = next_liveness_check_[static_cast<std::size_t>(peer)];
    if (now < next) return false;
    next = now + std::chrono::milliseconds(2);
    const int fd = pidfds_[static_cast<std::size_t>(peer)];
    if (fd >= 0) {
      pollfd pfd{fd, POLLIN, 0};
      return ::poll(&pfd, 1, 0) > 0;
    }
    return h && ::kill(h->pid, 0) != 0 && errno == ESRCH;  // kernels without pidfd_open
  }

  //! Debug pool: page protection of a block of this rank's pool (whole pages in that mode).
  void protect(std::byte* p, std::size_t bytes, int prot, const char* during) const {
    if (::mprotect(p, bytes, prot) != 0)
      throw transport_error("rank " + label(rank_) + ": TUTTI_DEBUG_POOL: mprotect during " + during +
                            " failed: " + std::strerror(errno));
  }

  op_state* acquire(int peer, std::uint64_t tag, std::size_t bytes, bool is_send) {
    check_peer(rank_, name, is_send, peer, world_);
    if (!broken_.empty()) throw transport_error(broken_ + "; the transport is unusable");
    op_state* op = ops_.acquire(rank_, name);
    op->status = op_pending;
    op->is_send = is_send;
    op->started = false;
    op->peer = peer;
    op->tag = tag;
    op->bytes = bytes;
    op->done = 0;
    op->src = nullptr;
    op->dst = nullptr;
    return op;
  }

  void finish(request& r) {
    op_state* op = std::exchange(r.op, nullptr);
    const int s = op->status;
    op->status = op_free;
    ops_.release(op);
    if (s == op_failed) throw transport_error(op->failure);
  }

  [[noreturn]] void lost(request& r) {
    const int peer = r.op->peer;
    const std::string what = describe(*r.op) + ": rank " + label(peer) + " is gone (peer lost)";
    // Only the streams with `peer` are lost (every later operation with it fails the same way); the
    // others still work, so a survivor can tell the rest who was lost (the fusion engine's
    // coordinator does) before it aborts.
    throw peer_lost(peer, what);
  }

  [[nodiscard]] std::string describe(const op_state& op) const {
    return "rank " + label(rank_) + ": " + (op.is_send ? "send of " : "receive of ") + std::to_string(op.bytes) +
           " bytes " + (op.is_send ? "to" : "from") + " rank " + label(op.peer);
  }

  //! Copies queued sends to `peer` into its ring for us, fragment by fragment, while slots are free.
  void push(int peer) {
    auto& q = sends_[static_cast<std::size_t>(peer)];
    std::byte* base = bases_[static_cast<std::size_t>(peer)];
    auto* ctl = control(base, rank_);
    auto& produced = produced_[static_cast<std::size_t>(peer)];
    while (op_state* op = q.head) {
      while (!(op->started && op->done == op->bytes)) {
        if (produced - ctl->consumed.load(std::memory_order_acquire) >= layout_.slots) return;  // ring full
        auto* h = slot(base, rank_, produced);
        const std::size_t n = std::min(layout_.slot_bytes, op->bytes - op->done);
        if (n) std::memcpy(reinterpret_cast<std::byte*>(h + 1), op->src + op->done, n);
        h->tag = op->tag;
        h->message_bytes = op->bytes;
        h->bytes = static_cast<std::uint32_t>(n);
        h->first = op->started ? 0 : 1;
        h->seq.store(produced + 1, std::memory_order_release);
        ++produced;
        op->done += n;
        op->started = true;
      }
      op->status = op_done;
      q.pop();
    }
  }

  //! Copies fragments that `peer` put in our ring into the queued receives, in order.
  void pull(int peer) {
    auto& q = recvs_[static_cast<std::size_t>(peer)];
    std::byte* base = bases_[static_cast<std::size_t>(rank_)];
    auto* ctl = control(base, peer);
    auto& expected = expected_[static_cast<std::size_t>(peer)];
    while (op_state* op = q.head) {
      while (!(op->started && op->done == op->bytes)) {
        auto* h = slot(base, peer, expected);
        if (h->seq.load(std::memory_order_acquire) != expected + 1) return;  // nothing new yet
        if (!op->started && (!h->first || h->tag != op->tag || h->message_bytes != op->bytes)) {
          broken_ = "rank " + label(rank_) + ": receive from rank " + label(peer) + " expected " +
                    std::to_string(op->bytes) + " bytes with tag " + std::to_string(op->tag) +
                    " but rank " + label(peer) + " sent " + std::to_string(h->message_bytes) +
                    " bytes with tag " + std::to_string(h->tag) + " (receives must be posted in the order sent)";
          op->failure = broken_;
          op->status = op_failed;
          q.pop();
          return;
        }
        if (h->bytes) std::memcpy(op->dst + op->done, reinterpret_cast<const std::byte*>(h + 1), h->bytes);
        op->done += h->bytes;
        op->started = true;
        ctl->consumed.store(expected + 1, std::memory_order_release);
        ++expected;
      }
      op->status = op_done;
      q.pop();
    }
  }

  int rank_;
  std::string node_id_;
  int world_;
  shm_detail::layout layout_;
  shm_detail::segment own_;
  std::vector<std::byte*> bases_;              //!< every rank's segment, mapped here (ours included)
  std::vector<shm_detail::segment> peers_;     //!< owning handles of the peers' mappings
  std::vector<int> pidfds_;                    //!< readable once the peer process has died
  std::vector<std::chrono::steady_clock::time_point> next_liveness_check_;
  std::vector<std::uint64_t> produced_;        //!< fragments written into each peer's ring for us
  std::vector<std::uint64_t> expected_;        //!< next fragment expected from each peer
  std::vector<op_queue> sends_;
  std::vector<op_queue> recvs_;
  op_pool<op_state> ops_;
  shm_detail::offset_pool pool_;  //!< our registered region's allocations
  std::uint64_t epoch_ = 0;       //!< one-sided steps taken; equal on all ranks between collectives
  unsigned spin_rounds_ = backoff::default_spin_rounds;  //!< 0 when ranks outnumber usable cores
  std::string broken_;  //!< non-empty once the transport cannot be used any more
  std::vector<int> names_;  //!< the job's rank of each rank here, for messages (name_ranks); empty: the same

  //! How messages name rank r (the job's number once name_ranks() was called).
  [[nodiscard]] std::string label(int r) const {
    const bool named = r >= 0 && static_cast<std::size_t>(r) < names_.size();
    return std::to_string(named ? names_[static_cast<std::size_t>(r)] : r);
  }
};

static_assert(transport_policy<shm>, "transport::shm must satisfy tutti::transport_policy");
static_assert(one_sided_transport<shm>, "transport::shm must satisfy tutti::one_sided_transport");

}  // namespace tutti::transport
