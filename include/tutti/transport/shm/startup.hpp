//! @file startup.hpp  transport::shm's start-up: the job's segments, created, mapped and unlinked.
//!
//! Each rank creates its own segment (/dev/shm/tutti-<job>.<rank>, mode 0600; the name's rule is
//! bootstrap/job_name.hpp) holding one inbound ring per peer, maps every peer's, and unlinks its
//! own name as soon as all peers have mapped it. From then on nothing is left in /dev/shm,
//! whatever happens to the job. mapped_job is what the other parts (channel.hpp, window.hpp) read.
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tutti/bootstrap/job_name.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/transport/shm/layout.hpp"
#include "tutti/transport/shm/liveness.hpp"
#include "tutti/transport/shm/segment.hpp"

namespace tutti::transport::shm_detail {

//! Who this rank is, every rank's segment as mapped here, and whether the transport is usable.
struct mapped_job {
  int rank;
  int world;
  layout geometry;
  segment own;
  std::vector<std::byte*> bases;     //!< every rank's segment, mapped here (ours included)
  std::vector<segment> peers;        //!< owning handles of the peers' mappings
  unsigned spin_rounds = backoff::default_spin_rounds;  //!< 0 when ranks outnumber usable cores
  std::string broken;                //!< non-empty once the transport cannot be used any more
  std::vector<int> names;            //!< the job's rank of each rank here, for messages; empty: the same

  mapped_job(int rank_, int world_, layout geometry_)
      : rank(rank_),
        world(world_),
        geometry(geometry_),
        bases(static_cast<std::size_t>(world_), nullptr),
        peers(static_cast<std::size_t>(world_)) {}

  //! How messages name rank r (the job's number once shm::name_ranks() was called).
  //! The job's rank number of this transport's rank r (they differ when the transport serves one
  //! node of a larger job and name_ranks() told it the job's numbers): what messages name.
  [[nodiscard]] int job_rank(int r) const {
    const bool named = r >= 0 && static_cast<std::size_t>(r) < names.size();
    return named ? names[static_cast<std::size_t>(r)] : r;
  }
  [[nodiscard]] std::string label(int r) const { return std::to_string(job_rank(r)); }

  [[nodiscard]] segment_header* header(int r) const noexcept {
    return bases.empty() || !bases[static_cast<std::size_t>(r)]
               ? nullptr
               : reinterpret_cast<segment_header*>(bases[static_cast<std::size_t>(r)]);
  }
  [[nodiscard]] channel_control* control(std::byte* base, int sender) const noexcept {
    return reinterpret_cast<channel_control*>(base + geometry.control_offset(static_cast<std::size_t>(sender)));
  }
  [[nodiscard]] slot_header* slot(std::byte* base, int sender, std::uint64_t seq) const noexcept {
    return reinterpret_cast<slot_header*>(base + geometry.ring_offset(static_cast<std::size_t>(sender)) +
                                          (seq % geometry.slots) * geometry.slot_stride());
  }
  [[nodiscard]] window_flags* flags(int r) const noexcept {
    return reinterpret_cast<window_flags*>(bases[static_cast<std::size_t>(r)] + geometry.flags_offset());
  }
};

//! The job id `id` names the segments with: refused (invalid_argument) when empty or when it
//! breaks job_name's alphabet or a segment name's length.
inline void check_job_id(const mapped_job& job, const std::string& id) {
  if (id.empty())
    throw invalid_argument(rank_text(job.job_rank(job.rank)) +
                           ": transport::shm needs a job id (TUTTI_JOB_ID, set by tutti-run) to name its segments");
  if (!job_name::valid(id, job_name::max_segment_job_length))
    throw invalid_argument(on_rank(job.job_rank(job.rank)) + "job id '" + id +
                           "' may only hold letters, digits, '-' and '_', at most " +
                           std::to_string(job_name::max_segment_job_length) +
                           " of them (it names the segments /dev/shm/tutti-<job id>.<rank>)");
}

//! Creates this rank's segment, maps every peer's (watching each peer's process), and unlinks
//! ours once every peer has mapped it. Throws timeout / peer_lost naming the missing peer.
inline void join(mapped_job& job, liveness& live, const std::string& job_id, std::chrono::nanoseconds time_limit) {
  const auto until = deadline::after(time_limit);
  const int rank = job.rank, world = job.world;
  const layout& geometry = job.geometry;
  job.own = segment::create(job_name::segment_name(job_id, rank), geometry.total_bytes());
  std::byte* base = job.own.data();
  // Construct the shared objects; peers see them only after the magic's release store.
  auto* h = new (base) segment_header{};
  h->world_size = static_cast<std::uint32_t>(world);
  h->rank = static_cast<std::uint32_t>(rank);
  h->pid = static_cast<std::int32_t>(::getpid());
  h->slots = static_cast<std::uint32_t>(geometry.slots);
  h->slot_bytes = geometry.slot_bytes;
  new (base + geometry.flags_offset()) window_flags{};
  h->stage_bytes = geometry.stage_bytes;
  h->pool_bytes = geometry.pool_bytes;
  for (int s = 0; s < world; ++s) {
    new (job.control(base, s)) channel_control{};
    for (std::size_t k = 0; k < geometry.slots; ++k) new (job.slot(base, s, k)) slot_header{};
  }
  job.bases[static_cast<std::size_t>(rank)] = base;
  h->magic.store(segment_magic, std::memory_order_release);

  for (int p = 0; p < world; ++p) {
    if (p == rank) continue;
    segment seg;
    const std::string name = job_name::segment_name(job_id, p);
    for (;;) {
      seg = segment::try_open(name, sizeof(segment_header));
      if (seg && reinterpret_cast<segment_header*>(seg.data())->magic.load(std::memory_order_acquire) == segment_magic)
        break;
      seg = segment{};
      if (until.passed())
        throw tutti::timeout(on_rank(job.job_rank(rank)) + "transport::shm: rank " + job.label(p) +
                             " did not create its segment /dev/shm" + name +
                             " before the deadline (is it running, with the same TUTTI_JOB_ID and world size?)");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const auto* ph = reinterpret_cast<segment_header*>(seg.data());
    if (ph->world_size != static_cast<std::uint32_t>(world) || ph->slots != geometry.slots ||
        ph->slot_bytes != geometry.slot_bytes || ph->stage_bytes != geometry.stage_bytes ||
        ph->pool_bytes != geometry.pool_bytes || seg.size() < geometry.total_bytes())
      throw invalid_argument(on_rank(job.job_rank(rank)) + "transport::shm: rank " + job.label(p) +
                             " has world_size " + std::to_string(ph->world_size) + ", " + std::to_string(ph->slots) +
                             " slots of " + std::to_string(ph->slot_bytes) + " bytes; this rank has " +
                             std::to_string(world) + ", " + std::to_string(geometry.slots) + " of " +
                             std::to_string(geometry.slot_bytes) +
                             " (TUTTI_SHM_* settings, including stage and pool sizes, must match on all ranks)");
    live.watch(p, ph->pid);
    job.bases[static_cast<std::size_t>(p)] = seg.data();
    job.peers[static_cast<std::size_t>(p)] = std::move(seg);
    job.header(p)->attached.fetch_add(1, std::memory_order_acq_rel);
  }
  h->mapped_all.store(1, std::memory_order_release);
  // Once every peer has mapped our segment its name is no longer needed: unlinking it now means
  // no crash, however abrupt, can leave it behind. A peer that is gone but had mapped everything
  // has counted itself in here already: it finished starting and left (construction returns as
  // soon as this loop ends), which is not a failed start.
  backoff b(job.spin_rounds);
  while (h->attached.load(std::memory_order_acquire) < static_cast<std::uint32_t>(world - 1)) {
    for (int p = 0; p < world; ++p)
      // gone first: its flag is raised after mapped_all, so seeing it means seeing mapped_all
      if (p != rank && live.gone(p, job.header(p)) && !job.header(p)->mapped_all.load(std::memory_order_acquire))
        throw peer_lost(p, on_rank(job.job_rank(rank)) + "transport::shm: rank " + job.label(p) +
                               " died while the job was starting");
    if (until.passed())
      throw tutti::timeout(on_rank(job.job_rank(rank)) + "transport::shm: only " +
                           std::to_string(h->attached.load()) + " of " + std::to_string(world - 1) +
                           " peers attached before the deadline");
    b.pause();
  }
  job.own.unlink();
}

}  // namespace tutti::transport::shm_detail
