//! @file network_agreement.hpp  All ranks agree on one network that every host is on AND can reach the others on.
//!
//! A subnet all hosts have an address in (interfaces.hpp) may still not connect them: a cable
//! unplugged, a firewall that drops, two private networks that reuse one address range, a
//! container bridge with the same subnet on every host. So, in three all-gathers:
//!  1. every rank publishes its node id and its host's interfaces; every rank ranks the shared
//!     subnets the same way (rank_networks);
//!  2. on each host, the first rank of the host (its leader) listens on its address in each of the
//!     best `max_probed` subnets (a port the kernel picks; the kernel completes connections to a
//!     listening socket by itself, so nothing needs to accept) and publishes the ports;
//!  3. each leader connects to every other host's listener on every probed subnet at once
//!     (non-blocking, one poll, TUTTI_NET_PROBE_TIMEOUT, default 2 s) and publishes what failed.
//! Every rank then takes the best subnet on which no leader failed; the subnets skipped are logged
//! on rank 0 with who could not reach whom. When none connects, one invalid_argument says, per
//! subnet, which host could not reach which and why. A job on one host probes nothing.
//!
//! The all-gather is a callable, so the same agreement runs over the store (multi_node) and over
//! PMIx before any store exists (pmix_rendezvous.hpp).
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tutti/bootstrap/concepts.hpp"
#include "tutti/bootstrap/interface_filter.hpp"
#include "tutti/bootstrap/interfaces.hpp"
#include "tutti/bootstrap/tcp_store/socket.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/message.hpp"

namespace tutti::bootstrap {

//! The agreed network, and which host each rank is on (rank order).
struct agreed_network {
  network_choice choice;
  std::vector<std::string> host_of_rank;
};

namespace agreement_detail {

inline constexpr std::size_t max_probed = 4;  //!< subnets probed; more are rarely shared, each costs a timeout

//! Connects to every (address, port) at once and waits for all of them or `limit`. "" = reached,
//! else why not.
[[nodiscard]] inline std::vector<std::string> probe_all(const std::vector<std::pair<std::string, int>>& targets,
                                                       std::chrono::nanoseconds limit) {
  std::vector<std::string> why(targets.size());
  std::vector<tcp_net::unique_fd> fds(targets.size());
  std::vector<pollfd> waiting;
  std::vector<std::size_t> which;
  for (std::size_t k = 0; k < targets.size(); ++k) {
    const auto& [address, port] = targets[k];
    if (port <= 0) {
      why[k] = "it could not listen there";
      continue;
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::inet_pton(AF_INET, address.c_str(), &to.sin_addr) != 1) {
      why[k] = "bad address";
      continue;
    }
    fds[k] = tcp_net::unique_fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP));
    if (!fds[k]) {
      why[k] = "socket: " + tcp_net::errno_text(errno);
      continue;
    }
    if (::connect(fds[k].get(), reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) continue;
    if (errno != EINPROGRESS) {
      why[k] = tcp_net::errno_text(errno);
      continue;
    }
    waiting.push_back({fds[k].get(), POLLOUT, 0});
    which.push_back(k);
  }
  const deadline until = deadline::after(limit);
  std::size_t open = waiting.size();
  while (open > 0) {
    const int rc = ::poll(waiting.data(), waiting.size(), tcp_net::ms_left(until));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) break;
    for (std::size_t w = 0; w < waiting.size(); ++w) {
      if (waiting[w].fd < 0 || waiting[w].revents == 0) continue;
      int so_error = 0;
      socklen_t len = sizeof so_error;
      ::getsockopt(waiting[w].fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error != 0) why[which[w]] = tcp_net::errno_text(so_error);
      waiting[w].fd = -1;  // poll ignores negative descriptors
      --open;
    }
  }
  for (std::size_t w = 0; w < waiting.size(); ++w)
    if (waiting[w].fd >= 0) why[which[w]] = "no answer within the probe time";
  return why;
}

}  // namespace agreement_detail

//! The agreement described at the top of this file. `all_gather(mine)` returns every rank's string
//! in rank order, the same on every rank; `interfaces` is this host's list (local_interfaces()).
template <class AllGather>
[[nodiscard]] agreed_network agree_on_network(AllGather&& all_gather, int rank, const std::string& host_id,
                                              const std::vector<net_interface>& interfaces,
                                              const interface_filter& filter) {
  const std::string who = rank_text(rank);
  // 1. Interfaces and the ranked candidates.
  const auto lists = all_gather(host_id + "\n" + encode_interfaces(interfaces));
  agreed_network out;
  std::vector<host_interfaces> hosts;
  std::map<std::string, int> leader;  // host -> its first rank
  for (std::size_t r = 0; r < lists.size(); ++r) {
    const auto& text = lists[r];
    const auto newline = text.find('\n');
    const std::string host = text.substr(0, newline);
    out.host_of_rank.push_back(host);
    if (!leader.emplace(host, static_cast<int>(r)).second) continue;
    hosts.push_back({host, decode_interfaces(newline == std::string::npos ? "" : text.substr(newline + 1),
                                             rank_text(r))});
  }
  std::vector<network_choice> candidates;
  try {
    candidates = rank_networks(hosts, filter);
  } catch (const invalid_argument& e) {
    throw invalid_argument(who + ": " + e.what());
  }
  if (hosts.size() == 1) {
    out.choice = candidates.front();
    return out;
  }
  candidates.resize(std::min(candidates.size(), agreement_detail::max_probed));
  const bool is_leader = leader.at(host_id) == rank;

  // 2. Leaders listen on their address in each candidate; the listeners live until step 3 is over.
  std::vector<tcp_net::unique_fd> listeners;
  std::string ports;
  if (is_leader)
    for (const auto& c : candidates) {
      int port = 0;
      try {
        listeners.push_back(tcp_net::listen_on(c.on.at(host_id).address, 0, rank));
        port = tcp_net::port_of(tcp_net::local_address(listeners.back().get()));
      } catch (const transport_error&) {  // reported by the peers as "could not listen there"
      }
      ports += std::to_string(port) + " ";
    }
  const auto all_ports = all_gather(ports);

  // 3. Leaders probe every other host on every candidate; everyone learns what failed.
  std::string report;  // per failure: "<candidate index> <target host>\t<why>\n"
  if (is_leader) {
    std::vector<std::pair<std::string, int>> targets;
    std::vector<std::pair<std::size_t, std::string>> what;  // (candidate, target host)
    for (const auto& [host, r] : leader) {
      if (host == host_id) continue;
      std::istringstream in(all_ports[static_cast<std::size_t>(r)]);
      for (std::size_t c = 0; c < candidates.size(); ++c) {
        int port = 0;
        in >> port;
        targets.push_back({candidates[c].on.at(host).address, port});
        what.push_back({c, host});
      }
    }
    const auto why = agreement_detail::probe_all(
        targets, config::seconds("TUTTI_NET_PROBE_TIMEOUT", std::chrono::seconds(2)));
    for (std::size_t k = 0; k < targets.size(); ++k)
      if (!why[k].empty()) report += std::to_string(what[k].first) + " " + what[k].second + "\t" + why[k] + "\n";
  }
  const auto reports = all_gather(report);
  listeners.clear();

  std::vector<std::string> failures(candidates.size());
  for (std::size_t r = 0; r < reports.size(); ++r) {
    std::istringstream lines(reports[r]);
    for (std::string line; std::getline(lines, line);) {
      std::size_t c = 0;
      std::istringstream f(line.substr(0, line.find('\t')));
      std::string target;
      if (!(f >> c >> target) || c >= candidates.size() || line.find('\t') == std::string::npos)
        throw transport_error(who + ": malformed reachability report from rank " + std::to_string(r));
      const auto& from = out.host_of_rank[r];
      failures[c] += "\n    " + from + " (" + candidates[c].on.at(from).name + ") could not reach " + target + " at " +
                     candidates[c].on.at(target).address + ": " + line.substr(line.find('\t') + 1);
    }
  }
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    if (!failures[c].empty()) continue;
    if (rank == 0)
      for (std::size_t skipped = 0; skipped < c; ++skipped)
        log(log_level::info, rank, "network " + candidates[skipped].subnet + " skipped, not every host reaches the others on it:" +
                                       failures[skipped]);
    out.choice = candidates[c];
    return out;
  }
  std::string text = who + ": the " + std::to_string(candidates.size()) + " network(s) all " +
                     std::to_string(hosts.size()) + " hosts share do not connect them:";
  for (std::size_t c = 0; c < candidates.size(); ++c) text += "\n  " + candidates[c].subnet + ":" + failures[c];
  text += "\nfix the route or firewall, or name a network that works in TUTTI_NET_IFACE";
  throw invalid_argument(text);
}

//! Every rank's string under `key/<rank>`, published by each and read by all (one all-gather).
template <store S>
[[nodiscard]] std::vector<std::string> store_all_gather(S& s, const std::string& key, int rank, int world,
                                                        const std::string& mine, deadline until) {
  s.set(key + "/" + std::to_string(rank), store_bytes(mine.begin(), mine.end()));
  std::vector<std::string> all(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    if (r == rank) {
      all[static_cast<std::size_t>(r)] = mine;
      continue;
    }
    const auto b = s.get(key + "/" + std::to_string(r), until);
    all[static_cast<std::size_t>(r)].assign(b.begin(), b.end());
  }
  return all;
}

//! The agreement over a store, under `prefix/<step>/<rank>`.
template <store S>
[[nodiscard]] network_choice agree_on_network(S& s, int rank, int world_size, const std::string& host_id,
                                              const interface_filter& filter, deadline until,
                                              const std::string& prefix = "tutti/net") {
  int step = 0;
  auto gather = [&](const std::string& mine) {
    return store_all_gather(s, prefix + "/" + std::to_string(step++), rank, world_size, mine, until);
  };
  return agree_on_network(gather, rank, host_id, local_interfaces(), filter).choice;
}

}  // namespace tutti::bootstrap
