//! @file rank_info.hpp  Who am I and who are my peers: rank, world and node-local placement.
#pragma once
#include <string>

#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"

namespace tutti {

struct rank_info {
  int rank = 0;          //!< 0 .. world_size-1
  int world_size = 1;    //!< number of ranks in the job
  int local_rank = 0;    //!< index among the ranks on this node
  int local_size = 1;    //!< number of ranks on this node
  std::string job_id;    //!< unique per launch; names shared resources so jobs never collide

  //! Throws invalid_argument when the description is inconsistent.
  void validate() const {
    auto bad = [&](const std::string& what) {
      throw invalid_argument("rank " + std::to_string(rank) + ": invalid rank description: " + what);
    };
    if (world_size < 1) bad("world_size=" + std::to_string(world_size) + " must be at least 1");
    if (rank < 0 || rank >= world_size)
      bad("rank=" + std::to_string(rank) + " is outside [0, " + std::to_string(world_size) + ")");
    if (local_size < 1 || local_size > world_size)
      bad("local_size=" + std::to_string(local_size) + " is outside [1, world_size=" + std::to_string(world_size) + "]");
    if (local_rank < 0 || local_rank >= local_size)
      bad("local_rank=" + std::to_string(local_rank) + " is outside [0, local_size=" + std::to_string(local_size) + ")");
  }
};

namespace detail {
inline bool first_set(const char* const* names, int n, long long fallback, long long& out, long long hi) {
  for (int i = 0; i < n; ++i) {
    if (config::raw(names[i])) {
      out = config::integer(names[i], fallback, 0, hi);
      return true;
    }
  }
  return false;
}
}  // namespace detail

//! Reads the rank description from the launcher's environment: tutti-run (TUTTI_*), Open MPI
//! (OMPI_COMM_WORLD_*), PMI (PMI_RANK/PMI_SIZE), Slurm (SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID)
//! and torchrun (RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE), in that order of preference.
//! Without any of them the process is rank 0 of a world of 1.
[[nodiscard]] inline rank_info rank_info_from_env() {
  constexpr long long big = 1 << 24;
  static const char* const rank_vars[] = {"TUTTI_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"};
  static const char* const size_vars[] = {"TUTTI_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS",
                                          "WORLD_SIZE"};
  static const char* const lrank_vars[] = {"TUTTI_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                           "SLURM_LOCALID", "LOCAL_RANK"};
  static const char* const lsize_vars[] = {"TUTTI_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                           "SLURM_NTASKS_PER_NODE", "LOCAL_WORLD_SIZE"};
  long long r = 0, w = 1, lr = -1, ls = -1;
  detail::first_set(rank_vars, 5, 0, r, big);
  detail::first_set(size_vars, 5, 1, w, big);
  const bool have_lr = detail::first_set(lrank_vars, 5, 0, lr, big);
  const bool have_ls = detail::first_set(lsize_vars, 5, 1, ls, big);
  rank_info info;
  info.rank = static_cast<int>(r);
  info.world_size = static_cast<int>(w);
  // Without node information every rank is assumed to share one node.
  info.local_rank = have_lr ? static_cast<int>(lr) : info.rank;
  info.local_size = have_ls ? static_cast<int>(ls) : info.world_size;
  info.job_id = config::raw("TUTTI_JOB_ID").value_or("");
  info.validate();
  return info;
}

}  // namespace tutti
