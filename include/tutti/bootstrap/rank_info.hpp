//! @file rank_info.hpp  Who am I and who are my peers: rank, world and node-local placement.
#pragma once
#include <unistd.h>

#include <string>

#include "tutti/bootstrap/job_name.hpp"
#include "tutti/bootstrap/node.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"

namespace tutti {

struct rank_info {
  int rank = 0;          //!< 0 .. world_size-1
  int world_size = 1;    //!< number of ranks in the job
  int local_rank = 0;    //!< index among the ranks on this node
  int local_size = 1;    //!< number of ranks on this node
  std::string job_id;    //!< unique per launch; names shared resources so jobs never collide
  std::string launcher = "none";  //!< whose variables described this rank (for logs and errors)
  std::string node_id;   //!< which node this rank runs on (node_id_from_env(); empty: not known)

  //! Throws invalid_argument when the description is inconsistent.
  void validate() const {
    auto bad = [&](const std::string& what) {
      throw invalid_argument(on_rank(rank) + "invalid rank description: " + what);
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

//! One launcher's variables. All four fields come from the same launcher: mixing them (rank from
//! torchrun, world size from Slurm) yields descriptions that validate and are wrong.
struct launcher_vars {
  const char* name;
  const char* marker;  //!< set only by this launcher (nullptr: the rank/size variables themselves)
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;  //!< nullptr when the launcher has no plain-integer variable for it
};

// Order matters: torchrun started by srun or mpirun sees its launcher's variables too, but its
// own describe the worker, so it is recognised (by TORCHELASTIC_RUN_ID) before them.
inline constexpr launcher_vars launchers[] = {
    {"tutti-run", nullptr, "TUTTI_RANK", "TUTTI_WORLD_SIZE", "TUTTI_LOCAL_RANK", "TUTTI_LOCAL_SIZE"},
    {"torchrun", "TORCHELASTIC_RUN_ID", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"Open MPI", nullptr, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"PMI", nullptr, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"Slurm", nullptr, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
    {"torchrun", nullptr, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
};

inline bool launcher_present(const launcher_vars& l) {
  if (l.marker) return config::raw(l.marker).has_value();
  return config::raw(l.rank) || config::raw(l.size);
}

}  // namespace detail

//! The id that names this job's shared resources (the rule: job_name.hpp): TUTTI_JOB_ID (set by
//! tutti-run, or by the user), else the launcher's own job id (Open MPI, PMIx, Slurm job and step,
//! torchrun), else the parent process id — ranks started together by one local launcher share their
//! parent. A launcher's id is made into a job id (job_name::from_launcher); a TUTTI_JOB_ID that
//! breaks the rule is the user's to fix, so it is refused (invalid_argument naming it and the rule).
[[nodiscard]] inline std::string job_id_from_env() {
  if (auto tutti_id = config::raw("TUTTI_JOB_ID")) return job_name::checked(*tutti_id, "TUTTI_JOB_ID");
  std::string id;
  if (auto ompi = config::raw("OMPI_MCA_ess_base_jobid")) id = "ompi-" + *ompi;
  else if (auto pmix = config::raw("PMIX_NAMESPACE")) id = "pmix-" + *pmix;
  else if (auto slurm = config::raw("SLURM_JOB_ID")) id = "slurm-" + *slurm + "-" + config::raw("SLURM_STEP_ID").value_or("0");
  else if (auto torch = config::raw("TORCHELASTIC_RUN_ID")) id = "torch-" + *torch;
  else id = "ppid-" + std::to_string(static_cast<long>(::getppid()));
  return job_name::from_launcher(id);
}

//! Reads the rank description from the launcher's environment: tutti-run (TUTTI_*), torchrun
//! (RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_*), PMI
//! (PMI_RANK/PMI_SIZE, MPICH's MPI_LOCALRANKID/MPI_LOCALNRANKS) and Slurm (SLURM_PROCID/
//! SLURM_NTASKS/SLURM_LOCALID/SLURM_NTASKS_PER_NODE). The first launcher found supplies every
//! field. Without node-local variables all ranks are assumed to share one node. Without any
//! launcher the process is rank 0 of a world of 1.
[[nodiscard]] inline rank_info rank_info_from_env() {
  constexpr long long big = 1 << 24;
  rank_info info;
  std::string read_from;  // "TUTTI_RANK=3, TUTTI_WORLD_SIZE=8, ...": what a refusal names
  for (const auto& l : detail::launchers) {
    if (!detail::launcher_present(l)) continue;
    for (const char* v : {l.rank, l.size, l.local_rank, l.local_size})
      if (const auto value = v ? config::raw(v) : std::nullopt)
        read_from += (read_from.empty() ? "" : ", ") + std::string(v) + "=" + *value;
    info.launcher = l.name;
    info.rank = static_cast<int>(config::integer(l.rank, 0, 0, big));
    info.world_size = static_cast<int>(config::integer(l.size, 1, 0, big));
    const bool has_local_rank = config::raw(l.local_rank).has_value();
    const bool has_local_size = l.local_size && config::raw(l.local_size).has_value();
    info.local_rank = has_local_rank ? static_cast<int>(config::integer(l.local_rank, 0, 0, big)) : info.rank;
    info.local_size = has_local_size ? static_cast<int>(config::integer(l.local_size, 1, 0, big))
                                     : info.world_size;
    break;
  }
  info.job_id = job_id_from_env();
  info.node_id = node_id_from_env();
  try {
    info.validate();
  } catch (const invalid_argument& e) {
    throw invalid_argument(std::string(e.what()) + " (from " + info.launcher + "'s variables " + read_from + ")");
  }
  return info;
}

}  // namespace tutti
