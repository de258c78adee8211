//! @file transport_choice.hpp  Which transport a job's environment calls for, decided alike on every
//! rank: shared memory when every rank is on one host, multi_node (shm inside each host, UCX
//! between) when the job spans hosts. with_transport.hpp turns the decision into the type.
//!
//! Every rank must pick the same transport (a job half on shm and half on multi_node waits for
//! peers that never come), so the choice comes only from what the launcher tells every rank alike:
//!  1. TUTTI_TRANSPORT=shm|multi_node, when set;
//!  2. else multi_node when the launcher places fewer ranks on this host than the job has
//!     (torchrun's LOCAL_WORLD_SIZE < WORLD_SIZE, Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, MPICH's
//!     MPI_LOCALNRANKS, tutti-run's TUTTI_LOCAL_SIZE with --ranks-per-node), or Slurm says the job
//!     has several nodes (SLURM_JOB_NUM_NODES > 1);
//!  3. else shm. A launcher that does not say how many of its ranks share a host is taken to run
//!     them on one (rank_info_from_env's rule): set TUTTI_TRANSPORT=multi_node for such a job.
#pragma once
#include <string>

#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"

namespace tutti::trainer {

enum class transport_kind { shm, multi_node };

//! What transport_from_env() chose, and why in words (for the program's first log line).
struct transport_decision {
  transport_kind kind = transport_kind::shm;
  std::string reason;
};

//! The rule at the top of this file. Throws invalid_argument for a TUTTI_TRANSPORT it does not know.
[[nodiscard]] inline transport_decision transport_from_env() {
  if (auto v = config::raw("TUTTI_TRANSPORT")) {
    if (*v == "shm") return {transport_kind::shm, "TUTTI_TRANSPORT=shm"};
    if (*v == "multi_node") return {transport_kind::multi_node, "TUTTI_TRANSPORT=multi_node"};
    throw invalid_argument(on_rank(rank_info_from_env().rank) + "TUTTI_TRANSPORT='" + *v +
                           "' is not a transport a program can choose at run time: shm or multi_node "
                           "(unset: multi_node when the launcher spreads the job over hosts, else shm)");
  }
  const auto info = rank_info_from_env();
  const std::string launcher = "launcher " + info.launcher;
  if (info.local_size < info.world_size)
    return {transport_kind::multi_node, std::to_string(info.local_size) + " of the job's " +
                                            std::to_string(info.world_size) + " ranks on this host (" + launcher + ")"};
  if (const auto nodes = config::integer("SLURM_JOB_NUM_NODES", 1, 1, 1 << 24); nodes > 1)
    return {transport_kind::multi_node, "SLURM_JOB_NUM_NODES=" + std::to_string(nodes)};
  return {transport_kind::shm, "all " + std::to_string(info.world_size) + (info.world_size == 1 ? " rank" : " ranks") +
                                   " on this host (" + launcher + ")"};
}

}  // namespace tutti::trainer
