//! @file interfaces.hpp  Which network the hosts of a job share: discover, exchange through the store, choose.
//!
//! Like NCCL_SOCKET_IFNAME's auto-detection, but agreed by all hosts: every rank lists its host's
//! IPv4 interfaces (getifaddrs; up, with an address), the lists travel through the store, and every
//! rank computes the same choice from the same lists:
//!  - candidates are subnets (network address and prefix length) in which EVERY host has an
//!    address: a subnet only some hosts are on cannot carry the job;
//!  - TUTTI_NET_IFACE (interface_filter.hpp, NCCL's syntax) removes interfaces by name first;
//!  - loopback only when the whole job is on one host;
//!  - then physical before virtual (docker*, br-*, veth*, ...: devices without /sys/.../device),
//!    the fastest (the slowest host's speed from /sys/class/net/X/speed), and by subnet text.
//! Nothing common is one invalid_argument listing every host's interfaces and what the filter
//! excluded. Which of the shared subnets actually connects the hosts is probed before one is
//! agreed on (bootstrap/network_agreement.hpp). The choice reaches UCX as UCX_NET_DEVICES (unless the user set it) and is logged at
//! info on rank 0. IPv6-only networks are not detected yet (docs/multi-node.md).
#pragma once
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tutti/bootstrap/interface_filter.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"

namespace tutti::bootstrap {

struct net_interface {
  std::string name;
  std::string address;    //!< dotted IPv4
  int prefix = 32;        //!< prefix length of its subnet
  bool loopback = false;
  bool is_virtual = false;
  long speed_mbps = 0;    //!< 0: unknown
};

namespace iface_detail {

[[nodiscard]] inline std::uint32_t parse_v4(const std::string& text) {
  in_addr a{};
  if (::inet_pton(AF_INET, text.c_str(), &a) != 1) throw invalid_argument("'" + text + "' is not an IPv4 address");
  return ntohl(a.s_addr);
}

[[nodiscard]] inline std::string format_v4(std::uint32_t v) {
  in_addr a{};
  a.s_addr = htonl(v);
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

[[nodiscard]] inline std::string subnet_of(const net_interface& i) {
  const std::uint32_t mask = i.prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - i.prefix);
  return format_v4(parse_v4(i.address) & mask) + "/" + std::to_string(i.prefix);
}

[[nodiscard]] inline bool looks_virtual(const std::string& name) {
  for (const char* p : {"docker", "br-", "virbr", "veth", "cni", "flannel", "cali", "tun", "tap", "vmnet", "lxcbr",
                        "podman", "vxlan", "weave"})
    if (name.rfind(p, 0) == 0) return true;
  std::ifstream device("/sys/class/net/" + name + "/device");  // physical NICs have a device link
  return !device.good() && !std::ifstream("/sys/class/net/" + name + "/device/uevent").good();
}

[[nodiscard]] inline long speed_of(const std::string& name) {
  long speed = 0;
  std::ifstream("/sys/class/net/" + name + "/speed") >> speed;  // EINVAL for some virtual devices
  return speed > 0 ? speed : 0;
}

}  // namespace iface_detail

//! This host's IPv4 interfaces that are up and have an address.
[[nodiscard]] inline std::vector<net_interface> local_interfaces() {
  std::vector<net_interface> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throw transport_error("getifaddrs failed: cannot list this host's interfaces");
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP)) continue;
    net_interface i;
    i.name = a->ifa_name;
    i.address = iface_detail::format_v4(ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr));
    const std::uint32_t mask =
        a->ifa_netmask ? ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_netmask)->sin_addr.s_addr) : ~0u;
    i.prefix = __builtin_popcount(mask);
    i.loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
    i.is_virtual = !i.loopback && iface_detail::looks_virtual(i.name);
    i.speed_mbps = i.loopback ? 0 : iface_detail::speed_of(i.name);
    out.push_back(std::move(i));
  }
  ::freeifaddrs(list);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

//! One line per interface: "name address/prefix loopback virtual speed".
[[nodiscard]] inline std::string encode_interfaces(const std::vector<net_interface>& list) {
  std::string out;
  for (const auto& i : list)
    out += i.name + " " + i.address + "/" + std::to_string(i.prefix) + " " + (i.loopback ? "1" : "0") + " " +
           (i.is_virtual ? "1" : "0") + " " + std::to_string(i.speed_mbps) + "\n";
  return out;
}

[[nodiscard]] inline std::vector<net_interface> decode_interfaces(const std::string& text, const std::string& whose) {
  std::vector<net_interface> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    net_interface i;
    std::string cidr;
    int lo = 0, virt = 0;
    if (!(f >> i.name >> cidr >> lo >> virt >> i.speed_mbps) || cidr.find('/') == std::string::npos)
      throw invalid_argument("malformed interface list from " + whose + ": '" + line + "'");
    i.address = cidr.substr(0, cidr.find('/'));
    i.prefix = std::stoi(cidr.substr(cidr.find('/') + 1));
    if (i.prefix < 0 || i.prefix > 32) throw invalid_argument("bad prefix in the interface list from " + whose);
    (void)iface_detail::parse_v4(i.address);
    i.loopback = lo != 0;
    i.is_virtual = virt != 0;
    out.push_back(std::move(i));
  }
  return out;
}

//! One host's interfaces, as every rank sees them.
struct host_interfaces {
  std::string host;  //!< node id
  std::vector<net_interface> interfaces;
};

//! The network the job uses: its subnet, and on each host the interface on it.
struct network_choice {
  std::string subnet;                          //!< "10.0.0.0/24"
  std::map<std::string, net_interface> on;     //!< host id -> its interface in `subnet`

  //! "10.0.0.0/24: h0 eth1 10.0.0.1; h1 eth1 10.0.0.2" (each host by its id's host part).
  [[nodiscard]] std::string describe() const {
    std::string text = subnet + ":";
    for (const auto& [host, i] : on) text += " " + host.substr(0, host.find('/')) + " " + i.name + " " + i.address + ";";
    text.pop_back();
    return text;
  }
};

//! Every network the job could use, best first (the order described at the top of this file);
//! `hosts` in rank order of their first rank. None: one invalid_argument listing every host's
//! interfaces and what the filter excluded.
[[nodiscard]] inline std::vector<network_choice> rank_networks(const std::vector<host_interfaces>& hosts,
                                                               const interface_filter& filter) {
  if (hosts.empty()) throw invalid_argument("choose_network: no hosts");
  const bool one_host = hosts.size() == 1;
  // subnet -> per host, the best interface of that host on it
  std::map<std::string, std::map<std::string, net_interface>> by_subnet;
  std::string excluded;
  for (const auto& h : hosts)
    for (const auto& i : h.interfaces) {
      if (!filter.allows(i.name)) {
        excluded += " " + h.host + ":" + i.name;
        continue;
      }
      if (i.loopback && !one_host) continue;
      by_subnet[iface_detail::subnet_of(i)].emplace(h.host, i);
    }
  using rank_key = std::tuple<bool, long, std::string>;  // (virtual, -slowest speed, subnet)
  std::vector<std::pair<rank_key, std::string>> ranked;
  for (const auto& [subnet, members] : by_subnet) {
    if (members.size() != hosts.size()) continue;
    bool any_virtual = false;
    long slowest = -1;
    for (const auto& [host, i] : members) {
      any_virtual |= i.is_virtual || i.loopback;
      slowest = slowest < 0 ? i.speed_mbps : std::min(slowest, i.speed_mbps);
    }
    ranked.push_back({rank_key{any_virtual, -slowest, subnet}, subnet});
  }
  if (ranked.empty()) {
    std::string text = "no network is shared by all " + std::to_string(hosts.size()) + " hosts of the job";
    if (!excluded.empty()) text += " (TUTTI_NET_IFACE excluded" + excluded + ")";
    text += "; their interfaces:";
    for (const auto& h : hosts) {
      text += "\n  " + h.host + ":";
      for (const auto& i : h.interfaces)
        text += " " + i.name + " " + i.address + "/" + std::to_string(i.prefix) +
                (i.loopback ? " (loopback)" : i.is_virtual ? " (virtual)" : "") + ";";
    }
    text += "\nconnect the hosts on one subnet, or name the interfaces to use in TUTTI_NET_IFACE";
    throw invalid_argument(text);
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<network_choice> out;
  for (const auto& [key, subnet] : ranked) out.push_back({subnet, by_subnet[subnet]});
  return out;
}

//! The best of rank_networks(): the choice before reachability is probed (network_agreement.hpp).
[[nodiscard]] inline network_choice choose_network(const std::vector<host_interfaces>& hosts,
                                                   const interface_filter& filter) {
  return rank_networks(hosts, filter).front();
}

namespace interfaces_detail {
//! UCX_NET_DEVICES as this process set it (apply_to_ucx), empty when it never did.
inline std::string& ucx_devices_set_here() {
  static std::string set_here;
  return set_here;
}
}  // namespace interfaces_detail

//! Whether UCX_NET_DEVICES is the IP interface tutti chose (not the user's): UCX then reaches other
//! hosts over TCP on it, whatever RDMA devices the host has (their UCX names are not interface names).
[[nodiscard]] inline bool ucx_network_chosen_by_tutti() {
  const char* now = std::getenv("UCX_NET_DEVICES");
  const std::string& set_here = interfaces_detail::ucx_devices_set_here();
  return now && !set_here.empty() && set_here == now;
}

//! Hands the choice to UCX (UCX_NET_DEVICES=<this host's interface>) unless the user set it, and
//! logs it at info on rank 0. Call before UCX is initialised.
inline void apply_to_ucx(const network_choice& choice, const std::string& host_id, int rank) {
  const auto it = choice.on.find(host_id);
  if (it == choice.on.end()) return;
  const std::string text = "network " + choice.describe();
  // What this process set itself earlier (an earlier transport) is not the user's choice.
  std::string& set_here = interfaces_detail::ucx_devices_set_here();
  if (const char* user = std::getenv("UCX_NET_DEVICES"); user && *user && set_here != user) {
    if (rank == 0) log(log_level::info, rank, text + " UCX_NET_DEVICES=" + user + " kept (set by the user)");
    return;
  }
  set_here = it->second.name;
  ::setenv("UCX_NET_DEVICES", it->second.name.c_str(), 1);
  if (rank == 0) log(log_level::info, rank, text + " (UCX_NET_DEVICES=" + it->second.name + " here)");
}

}  // namespace tutti::bootstrap
