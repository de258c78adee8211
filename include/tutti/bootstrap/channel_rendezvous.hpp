//! @file channel_rendezvous.hpp  rank 0's tcp_store found through a channel the launcher already
//! gives every rank: PMIx under mpirun or srun (pmix_rendezvous.hpp), torch's c10d Store under
//! torch.distributed (integrations/torch), or any other that can publish and fence.
//!
//! A Channel offers what PMIx does:
//!  - `put(key, value)` publishes this rank's value under `key`, `commit()` makes the puts visible
//!    at the next fence;
//!  - `fence(until, what)` returns once every rank has reached it (tutti::timeout naming `what`
//!    at `until`);
//!  - `get(rank, key)` reads what `rank` put under `key` before the last fence.
//! Then:
//!  1. the network every rank agrees on (bootstrap/network_agreement.hpp: interface lists, then the
//!     probe listeners' ports, then what failed to connect, each an all-gather; TUTTI_NET_IFACE
//!     applies), so a job whose hosts share no working network fails on every rank with one
//!     message, before the store listens;
//!  2. rank 0 starts the tcp_store bound to its own address on that network (loopback when the
//!     job is on one host), on TUTTI_STORE_PORT or a port the kernel picks, with a fresh job key,
//!     and publishes port and key; every other rank connects there.
//! The key travels through the channel, so the store keeps out everyone the channel keeps out (PMIx:
//! everyone outside the job; torch's TCPStore: nobody who can reach its port, see docs/pytorch.md). A
//! user key (TUTTI_JOB_KEY) takes its place when set on every rank (then it is not published).
#pragma once
#include <openssl/crypto.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "tutti/bootstrap/interface_filter.hpp"
#include "tutti/bootstrap/interfaces.hpp"
#include "tutti/bootstrap/job_key.hpp"
#include "tutti/bootstrap/network_agreement.hpp"
#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/bootstrap/tcp_store.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"

namespace tutti::bootstrap {

namespace channel_detail {
inline constexpr const char* port_key = "tutti.rdv.port";   //!< rank 0's store port (decimal, or "error: ...")
inline constexpr const char* secret_key = "tutti.rdv.key";  //!< the generated job key ("" = user key)
}  // namespace channel_detail

//! Joins (rank 0: serves) the job's tcp_store through `channel`; see the top of this file. `who`
//! prefixes every message ("rank 3 (launched by mpirun)"), `channel_name` names the channel in them
//! ("PMIx (job 1234@0)"); `make_key` makes rank 0's key when the user set none.
template <class Channel, class MakeKey>
[[nodiscard]] std::shared_ptr<tcp_store> store_through_channel(Channel& channel, const std::string& channel_name,
                                                               const rank_info& info, const std::string& who,
                                                               MakeKey make_key, deadline until) {
  const int world = info.world_size;
  // 1. The network every rank agrees on (interfaces, ranked, probed), each all-gather a fence.
  int step = 0;
  auto gather = [&](const std::string& mine) {
    const std::string key = "tutti.rdv.net" + std::to_string(step++);
    channel.put(key, mine);
    channel.commit();
    channel.fence(until, step == 1 ? "tutti: host interfaces" : "tutti: network probe");
    std::vector<std::string> all;
    for (int r = 0; r < world; ++r) all.push_back(channel.get(r, key));
    return all;
  };
  const auto agreed = agree_on_network(gather, info.rank, info.node_id, local_interfaces(), interface_filter::from_env());
  const std::string host0 = agreed.host_of_rank.at(0);
  const network_choice& choice = agreed.choice;
  const std::string address = choice.on.at(host0).address;

  // 2. Rank 0's store on that network; its port and key to everyone.
  auto user_key = job_key_from_env();
  tcp_store_options opt;
  opt.rank = info.rank;
  opt.is_server = info.rank == 0;
  opt.server_rank = 0;
  opt.max_frame_bytes = config::bytes("TUTTI_STORE_MAX_FRAME", opt.max_frame_bytes, 4096, std::size_t{1} << 31);
  std::shared_ptr<tcp_store> store;
  if (opt.is_server) {
    opt.bind_address = address;
    opt.port = static_cast<std::uint16_t>(config::integer("TUTTI_STORE_PORT", 0, 0, 65535));
    opt.key = user_key ? std::move(*user_key) : make_key(info.rank);
    const auto bytes = opt.key.bytes();
    std::string published = user_key ? std::string() : std::string(bytes.begin(), bytes.end());
    std::string port_text;
    std::exception_ptr failed;
    try {
      store = std::make_shared<tcp_store>(std::move(opt));
      port_text = std::to_string(store->port());
    } catch (const std::exception& e) {  // tell the others instead of leaving them at the fence
      failed = std::current_exception();
      port_text = std::string("error: ") + e.what();
      published.clear();
    }
    channel.put(channel_detail::port_key, port_text);
    channel.put(channel_detail::secret_key, published);
    OPENSSL_cleanse(published.data(), published.size());
    channel.commit();
    if (!failed)
      log(log_level::info, info.rank, "rendezvous through " + channel_name + ": store at " + address + ":" + port_text +
                                          " on " + choice.on.at(host0).name);
    channel.fence(until, "tutti: rank 0's store");
    if (failed) std::rethrow_exception(failed);
    return store;
  }
  channel.fence(until, "tutti: rank 0's store");
  const std::string port = channel.get(0, channel_detail::port_key);
  if (port.rfind("error: ", 0) == 0)
    throw transport_error(who + ": rank 0 could not start the job's store: " + port.substr(7));
  std::string secret = channel.get(0, channel_detail::secret_key);
  if (secret.empty() && !user_key)
    throw invalid_argument(who + ": rank 0 uses TUTTI_JOB_KEY, which this rank does not have; set it on every "
                                 "rank (under mpirun: mpirun -x TUTTI_JOB_KEY) or on none");
  opt.key = secret.empty() ? std::move(*user_key) : job_key(secret, "the key rank 0 published through " + channel_name);
  OPENSSL_cleanse(secret.data(), secret.size());
  opt.host = address;
  opt.port = static_cast<std::uint16_t>(std::stoul(port));
  store = std::make_shared<tcp_store>(std::move(opt));
  return store;
}

}  // namespace tutti::bootstrap
