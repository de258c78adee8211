//! @file make_group.hpp  What torch.distributed calls for backend "tutti": the group's transport,
//! chosen alike on every rank, and its communicator.
//!
//! Rendezvous through torch's own Store, the one init_process_group made (env://, tcp://, or a
//! Store passed in): under torchrun torch's TCPStore already holds MASTER_PORT, a group's keys
//! belong in the group's (prefixed) store, and torch's users set nothing more. Through it
//! (c10d_channel.hpp) every rank publishes its node id (TUTTI_NODE_ID, else hostname and boot id),
//! and rank 0 a fresh job id. Then:
//!  - TUTTI_TRANSPORT=shm|multi_node when set (shm with ranks on several hosts is refused);
//!  - else shm when every rank is on one host, multi_node (shm inside each host, UCX between)
//!    when not: rank 0's tcp_store found through torch's store (tutti/bootstrap/channel_rendezvous.hpp:
//!    the network every host shares, then the store's port and a fresh key), then multi_node over it.
//! The algorithm is tuned (the tuning table: TUTTI_TUNING_FILE, else the built-in one), over the
//! candidates tutti-tune measures for that transport (tutti/algorithm/tuned_sets.hpp).
#pragma once
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <set>
#include <string>

#include <tutti/algorithm/tuned_sets.hpp>
#include <tutti/bootstrap/node.hpp>
#include <tutti/tutti.hpp>
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
#include <tutti/bootstrap/channel_rendezvous.hpp>
#include <tutti/bootstrap/job_store.hpp>
#include <tutti/transport/multi_node.hpp>
#endif

#include "c10d_channel.hpp"
#include "checks.hpp"
#include "process_group.hpp"

namespace tutti_torch {

using one_host_communicator = tutti::communicator<tutti::transport::shm, tutti::algorithm::tuned_on_one_host>;
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
using across_hosts_communicator =
    tutti::communicator<tutti::transport::multi_node, tutti::algorithm::tuned_across_hosts>;
#endif

//! Whether the group spans hosts, from every rank's node id and TUTTI_TRANSPORT; `why` in words.
inline bool spans_hosts(const std::vector<std::string>& node_ids, int rank, std::string& why) {
  const site at{rank, "init_process_group"};
  const std::set<std::string> hosts(node_ids.begin(), node_ids.end());
  const std::string where = std::to_string(node_ids.size()) + " ranks on " + std::to_string(hosts.size()) +
                            (hosts.size() == 1 ? " host" : " hosts");
  if (const auto forced = tutti::config::raw("TUTTI_TRANSPORT")) {
    if (*forced == "multi_node") return why = "TUTTI_TRANSPORT=multi_node (" + where + ")", true;
    TORCH_CHECK(*forced == "shm", at, ": TUTTI_TRANSPORT='", *forced,
                "' is not a transport the torch backend offers: shm or multi_node (unset: chosen from where the "
                "ranks are)");
    TORCH_CHECK(hosts.size() == 1, at, ": TUTTI_TRANSPORT=shm, but the group has ", where,
                "; shared memory cannot span hosts (unset TUTTI_TRANSPORT, or set it to multi_node)");
    return why = "TUTTI_TRANSPORT=shm (" + where + ")", false;
  }
  why = where;
  return hosts.size() > 1;
}

inline c10::intrusive_ptr<c10d_backend> make_process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                                  int size, std::chrono::milliseconds timeout) {
  const auto until = tutti::deadline::after(timeout);
  c10d_channel channel(*store, rank, size);
  tutti::rank_info info;
  info.rank = rank;
  info.world_size = size;
  info.launcher = "torch.distributed";
  info.node_id = tutti::node_id_from_env();
  const auto node_ids = channel.all_gather("node", info.node_id, until, "tutti: node ids");
  // Rank 0's fresh job id names the group's shm segments: two groups never share one.
  std::string drawn;
  if (rank == 0) drawn = "torch-" + std::to_string(std::random_device{}()) + std::to_string(std::random_device{}());
  if (rank == 0) channel.put("job", drawn);
  info.job_id = channel.get(0, "job");  // waits for rank 0's (torch's get waits for the key)
  auto options = tutti::communicator_options::from_env();
  options.timeout = timeout;

  std::string why;
  const bool across = spans_hosts(node_ids, rank, why);
  if (rank == 0)
    tutti::log(tutti::log_level::info, 0,
               std::string("torch backend: transport ") + (across ? "multi_node" : "shm") + " (" + why + ")");
  if (!across) {
    info.local_rank = rank;
    info.local_size = size;
    auto comm = std::make_unique<one_host_communicator>(std::make_unique<tutti::transport::shm>(info), options);
    // The hook's codecs: each a shm job of its own, "<job>-<codec>".
    auto codecs = std::make_unique<codec_communicators<tutti::transport::shm>>(
        [info](const std::string& codec) {
          auto mine = info;
          mine.job_id += "-" + codec;
          return std::make_unique<tutti::transport::shm>(mine);
        },
        options);
    return c10::make_intrusive<process_group<one_host_communicator>>(rank, size, std::move(comm), std::move(codecs));
  }
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
  const std::string who = "rank " + std::to_string(rank) + " (torch.distributed)";
  auto tcp = tutti::bootstrap::store_through_channel(channel, "torch's store", info, who,
                                                     tutti::bootstrap::detail::fresh_job_key, until);
  // The group's own store (one per group: each group meets through its own torch store), so its
  // scopes are the group's alone.
  auto transport = std::make_unique<tutti::transport::multi_node>(info, tcp, "tutti/group");
  auto comm = std::make_unique<across_hosts_communicator>(std::move(transport), options);
  // The hook's codecs: each multi_node in a key scope of its own in the same store, named by the
  // codec (not by a counter: they are made on the group's worker, beside the caller's thread).
  auto codecs = std::make_unique<codec_communicators<tutti::transport::multi_node>>(
      [info, tcp](const std::string& codec) {
        return std::make_unique<tutti::transport::multi_node>(info, tcp, "tutti/codec-" + codec);
      },
      options);
  return c10::make_intrusive<process_group<across_hosts_communicator>>(rank, size, std::move(comm), std::move(codecs));
#else
  TORCH_CHECK(false, site{rank, "init_process_group"}, ": the group has ", why,
              ", but this build of the torch backend has no multi_node transport (it needs UCX and OpenSSL: "
              "libucx-dev, libssl-dev)");
#endif
}

}  // namespace tutti_torch
