//! @file interfaces_test.cpp  bootstrap/interfaces.hpp and network_agreement.hpp: discovery, the pure choice, probed agreement.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tutti/bootstrap/inproc_store.hpp"
#include "tutti/bootstrap/interfaces.hpp"
#include "tutti/bootstrap/network_agreement.hpp"

namespace {
using namespace tutti::bootstrap;
net_interface nic(std::string name, std::string addr, int prefix, bool virt = false, long speed = 0) {
  return {std::move(name), std::move(addr), prefix, false, virt, speed};
}
net_interface lo() { return {"lo", "127.0.0.1", 8, true, false, 0}; }
interface_filter none() { return interface_filter::parse(""); }
}  // namespace

TEST_CASE("interfaces: this host lists lo as loopback 127.0.0.1/8, and lists survive encode/decode") {
  const auto here = local_interfaces();
  bool found = false;
  for (const auto& i : here)
    if (i.name == "lo") found = i.loopback && i.address == "127.0.0.1" && i.prefix == 8;
  CHECK(found);
  const auto again = decode_interfaces(encode_interfaces(here), "test");
  REQUIRE(again.size() == here.size());
  for (std::size_t k = 0; k < here.size(); ++k) {
    CHECK(again[k].name == here[k].name);
    CHECK(again[k].address == here[k].address);
    CHECK(again[k].prefix == here[k].prefix);
    CHECK(again[k].is_virtual == here[k].is_virtual);
  }
  CHECK_THROWS_AS((void)decode_interfaces("eth0 10.0.0.1 0 0 0\n", "rank 3"), tutti::invalid_argument);
  CHECK_THROWS_AS((void)decode_interfaces("eth0 10.0.0.999/24 0 0 0\n", "rank 3"), tutti::invalid_argument);
}

TEST_CASE("interfaces: the choice is a subnet every host is on, physical and fast first, loopback only alone") {
  // eth0 sorts first but its subnets differ per host (the decoy); eth1 is shared.
  std::vector<host_interfaces> hosts = {
      {"a", {lo(), nic("eth0", "10.1.10.1", 24), nic("eth1", "10.1.1.1", 24, true)}},
      {"b", {lo(), nic("eth0", "10.1.11.1", 24), nic("eth1", "10.1.1.2", 24, true)}}};
  auto c = choose_network(hosts, none());
  CHECK(c.subnet == "10.1.1.0/24");
  CHECK(c.on.at("b").name == "eth1");
  CHECK(c.on.at("b").address == "10.1.1.2");
  // A physical shared network beats a virtual one; among physical, the faster (slowest host's speed).
  hosts[0].interfaces.push_back(nic("ib0", "10.2.0.1", 16, false, 10000));
  hosts[1].interfaces.push_back(nic("ib0", "10.2.0.2", 16, false, 10000));
  hosts[0].interfaces.push_back(nic("em1", "10.3.0.1", 16, false, 1000));
  hosts[1].interfaces.push_back(nic("em1", "10.3.0.2", 16, false, 100000));
  CHECK(choose_network(hosts, none()).subnet == "10.2.0.0/16");
  // Host order does not change the answer.
  std::vector<host_interfaces> swapped = {hosts[1], hosts[0]};
  CHECK(choose_network(swapped, none()).subnet == "10.2.0.0/16");
  // The filter removes names first.
  CHECK(choose_network(hosts, interface_filter::parse("^ib")).subnet == "10.3.0.0/16");
  CHECK(choose_network(hosts, interface_filter::parse("eth")).subnet == "10.1.1.0/24");
  // One host: loopback is fine; several: never.
  CHECK(choose_network({{"a", {lo()}}}, none()).subnet == "127.0.0.0/8");
  CHECK_THROWS_AS((void)choose_network({{"a", {lo()}}, {"b", {lo()}}}, none()), tutti::invalid_argument);
}

TEST_CASE("interfaces: nothing shared is one error listing every host's interfaces and the filter's exclusions") {
  std::vector<host_interfaces> hosts = {{"h0", {lo(), nic("eth0", "10.213.10.1", 24), nic("eth1", "10.213.1.1", 24)}},
                                        {"h1", {lo(), nic("eth0", "10.213.11.1", 24), nic("eth1", "10.213.1.2", 24)}}};
  std::string text;
  try {
    (void)choose_network(hosts, interface_filter::parse("^eth1"));
  } catch (const tutti::invalid_argument& e) {
    text = e.what();
  }
  for (const char* want : {"no network is shared by all 2 hosts", "TUTTI_NET_IFACE excluded h0:eth1 h1:eth1",
                           "h0: lo 127.0.0.1/8 (loopback); eth0 10.213.10.1/24;", "h1:", "10.213.11.1/24"})
    CHECK_MESSAGE(text.find(want) != std::string::npos, want);
}

TEST_CASE("interfaces: ranks agree through a store (4 threads, one host) on loopback") {
  inproc_store store;
  std::vector<std::string> chosen(4);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r)
    ranks.emplace_back([&, r] {
      chosen[static_cast<std::size_t>(r)] =
          agree_on_network(store, r, 4, "host", none(), tutti::deadline::after(std::chrono::seconds(5))).subnet;
    });
  for (auto& t : ranks) t.join();
  for (const auto& c : chosen) CHECK(c == chosen[0]);
  CHECK(!chosen[0].empty());
}

namespace {
// 4 threads as 2 hosts (ranks 0,1 on "a", 2,3 on "b") agreeing over an inproc store, each host
// claiming `lists[host]`; returns each rank's subnet or error text.
std::vector<std::string> agree_as_two_hosts(const std::vector<std::vector<net_interface>>& lists) {
  inproc_store store;
  std::vector<std::string> out(4);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r)
    ranks.emplace_back([&, r] {
      const auto until = tutti::deadline::after(std::chrono::seconds(10));
      int step = 0;
      auto gather = [&](const std::string& mine) {
        return store_all_gather(store, "net/" + std::to_string(step++), r, 4, mine, until);
      };
      try {
        const auto agreed = agree_on_network(gather, r, r < 2 ? "a" : "b", lists[r < 2 ? 0 : 1], none());
        out[static_cast<std::size_t>(r)] = agreed.choice.subnet;
        CHECK(agreed.host_of_rank == std::vector<std::string>{"a", "a", "b", "b"});
      } catch (const tutti::invalid_argument& e) {
        out[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : ranks) t.join();
  return out;
}
}  // namespace

TEST_CASE("network agreement: a shared subnet that does not connect the hosts is skipped; none connecting is an error") {
  // eth9 ranks first (physical, 100 Gbit/s) but no host can listen on 10.255.255.x; "eth0" on
  // 127.0.0.0/8 (posing as a physical NIC) connects the two "hosts" for real.
  const std::vector<std::vector<net_interface>> lists = {
      {nic("eth0", "127.0.0.1", 8, false, 1000), nic("eth9", "10.255.255.1", 24, false, 100000)},
      {nic("eth0", "127.0.0.1", 8, false, 1000), nic("eth9", "10.255.255.2", 24, false, 100000)}};
  REQUIRE(choose_network({{"a", lists[0]}, {"b", lists[1]}}, none()).subnet == "10.255.255.0/24");
  for (const auto& subnet : agree_as_two_hosts(lists)) CHECK(subnet == "127.0.0.0/8");

  const std::vector<std::vector<net_interface>> broken = {{lists[0][1]}, {lists[1][1]}};
  for (const auto& text : agree_as_two_hosts(broken)) {
    CHECK_MESSAGE(text.find("network(s) all 2 hosts share do not connect them") != std::string::npos, text);
    CHECK_MESSAGE(text.find("a (eth9) could not reach b at 10.255.255.2: it could not listen there") !=
                      std::string::npos, text);
  }
}

TEST_CASE("interfaces: UCX_NET_DEVICES set by tutti is known as tutti's choice; the user's is not") {
  const char* before = std::getenv("UCX_NET_DEVICES");
  const std::string saved = before ? before : "";
  tutti::bootstrap::network_choice choice;
  choice.subnet = "10.213.1.0/24";
  tutti::bootstrap::net_interface eth1;
  eth1.name = "eth1";
  eth1.address = "10.213.1.1";
  choice.on["h0"] = eth1;
  ::unsetenv("UCX_NET_DEVICES");
  CHECK_FALSE(tutti::bootstrap::ucx_network_chosen_by_tutti());
  tutti::bootstrap::apply_to_ucx(choice, "h0", 1);
  CHECK(std::string(std::getenv("UCX_NET_DEVICES")) == "eth1");
  CHECK(tutti::bootstrap::ucx_network_chosen_by_tutti());  // UCX then goes over TCP on eth1
  ::setenv("UCX_NET_DEVICES", "mlx5_0:1", 1);               // the user's: not tutti's choice
  CHECK_FALSE(tutti::bootstrap::ucx_network_chosen_by_tutti());
  tutti::bootstrap::apply_to_ucx(choice, "h0", 1);          // kept as the user set it
  CHECK(std::string(std::getenv("UCX_NET_DEVICES")) == "mlx5_0:1");
  if (before) ::setenv("UCX_NET_DEVICES", saved.c_str(), 1);
  else ::unsetenv("UCX_NET_DEVICES");
}
