//! @file pmix_rendezvous.hpp  Under mpirun or srun: find rank 0's store through PMIx, with no variable set.
//!
//! Four PMIx fences, each a few milliseconds:
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
#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "tutti/bootstrap/interface_filter.hpp"
#include "tutti/bootstrap/interfaces.hpp"
#include "tutti/bootstrap/job_key.hpp"
#include "tutti/bootstrap/network_agreement.hpp"
#include "tutti/bootstrap/pmix.hpp"
#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/bootstrap/tcp_store.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/message.hpp"

namespace tutti::bootstrap {

namespace pmix_detail {
inline constexpr const char* port_key = "tutti.rdv.port";    //!< rank 0's store port (decimal)
inline constexpr const char* secret_key = "tutti.rdv.key";   //!< the generated job key ("" = user key)
}  // namespace pmix_detail

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

  // 1. The network every rank agrees on (interfaces, ranked, probed), each all-gather a fence.
  int step = 0;
  auto gather = [&](const std::string& mine) {
    const std::string key = "tutti.rdv.net" + std::to_string(step++);
    session.put(key, mine);
    session.commit();
    session.fence(until, step == 1 ? "tutti: host interfaces" : "tutti: network probe");
    std::vector<std::string> all;
    for (int r = 0; r < world; ++r) all.push_back(session.get(r, key));
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
    session.put(pmix_detail::port_key, port_text);
    session.put(pmix_detail::secret_key, published);
    OPENSSL_cleanse(published.data(), published.size());
    session.commit();
    if (!failed)
      log(log_level::info, info.rank, "rendezvous through PMIx (job " + session.nspace() + "): store at " +
                                          address + ":" + port_text + " on " + choice.on.at(host0).name);
    session.fence(until, "tutti: rank 0's store");
    if (failed) std::rethrow_exception(failed);
    return store;
  }
  session.fence(until, "tutti: rank 0's store");
  const std::string port = session.get(0, pmix_detail::port_key);
  if (port.rfind("error: ", 0) == 0)
    throw transport_error(who + ": rank 0 could not start the job's store: " + port.substr(7));
  std::string secret = session.get(0, pmix_detail::secret_key);
  if (secret.empty() && !user_key)
    throw invalid_argument(who + ": rank 0 uses TUTTI_JOB_KEY, which this rank does not have; set it on every "
                                 "rank (mpirun -x TUTTI_JOB_KEY) or on none");
  opt.key = secret.empty() ? std::move(*user_key) : job_key(secret, "the key rank 0 published through PMIx");
  OPENSSL_cleanse(secret.data(), secret.size());
  opt.host = address;
  opt.port = static_cast<std::uint16_t>(std::stoul(port));
  store = std::make_shared<tcp_store>(std::move(opt));
  return store;
}

}  // namespace tutti::bootstrap
