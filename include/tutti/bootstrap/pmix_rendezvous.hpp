//! @file pmix_rendezvous.hpp  Under mpirun or srun: find rank 0's store through PMIx, with no variable set.
//!
//! Four PMIx fences, each a few milliseconds (bootstrap/channel_rendezvous.hpp, with PMIx as the
//! channel):
//!  1. three for the network agreement (bootstrap/network_agreement.hpp): node ids and interface
//!     lists, then the probe listeners' ports, then what failed to connect; every rank takes the
//!     same choice (TUTTI_NET_IFACE applies), so a job whose hosts share no working network fails
//!     on every rank with one message — before the store listens;
//!  2. rank 0 starts the tcp_store bound to its own address on that network (loopback when the
//!     job is on one host), on TUTTI_STORE_PORT or a port the kernel picks, with a fresh
//!     job key from OpenSSL's CSPRNG, and publishes port and key; every other rank connects to
//!     that address.
//! The key travels through the launcher's PMIx channel, which PMIx shows only to the processes
//! of this job (its namespace) and which already carries what the launcher trusts them with; it
//! keeps everyone else on the network out of the store. A user key (TUTTI_JOB_KEY) takes its
//! place when set on every rank (then it is not published).
#pragma once
#include <memory>
#include <string>

#include "tutti/bootstrap/channel_rendezvous.hpp"
#include "tutti/bootstrap/pmix.hpp"
#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/bootstrap/tcp_store.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"

namespace tutti::bootstrap {

//! Joins (rank 0: serves) the job's tcp_store, found through PMIx; see the top of this file.
//! `make_key` makes rank 0's key when the user set none (job_store.hpp passes fresh_job_key).
template <class MakeKey>
[[nodiscard]] std::shared_ptr<tcp_store> store_through_pmix(const rank_info& info, MakeKey make_key) {
  const std::string who = rank_text(info.rank) + " (launched by " + info.launcher + ")";
  const deadline until = deadline::after(config::timeout());
  pmix_session session(who);
  const int world = session.job_size();
  if (session.rank() != info.rank || world != info.world_size)
    throw invalid_argument(who + ": PMIx says this is rank " + std::to_string(session.rank()) + " of " +
                           std::to_string(world) + " but the launcher's variables say rank " +
                           std::to_string(info.rank) + " of " + std::to_string(info.world_size) +
                           "; do not mix launchers (e.g. torchrun's variables under mpirun)");
  return store_through_channel(session, "PMIx (job " + session.nspace() + ")", info, who, make_key, until);
}

}  // namespace tutti::bootstrap
