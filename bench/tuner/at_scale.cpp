//! @file at_scale.cpp  tutti-model-at-scale: the cost model's allreduce predictions on a cluster we cannot run
//! (8 GPUs per node on NVLink, InfiniBand NDR between nodes), beside NCCL's own model of its ring and tree.
//!
//! No measurement: it prints a markdown table (docs/tuning.md, "The cost model") of tuner::
//! predicted_seconds for each tutti schedule at 8, 64, 256 and 1,024 nodes, 8 B .. 4 GiB, and the
//! time NCCL's tuner would predict for its ring and tree with each protocol (ncclTopoTuneModel and
//! ncclTopoGetAlgoTime of src/graph/tuning.cc, NVIDIA/nccl at 5067397, 2026-06-11, re-typed here
//! for the one topology below), so the two models' crossovers can be compared.
//!
//! Usage: tutti-model-at-scale [--nodes 8,64,256,1024] [--csv]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <tutti/tuner/predict.hpp>

namespace {
using tutti::collective;
using tutti::tuner::cost_parameters;

constexpr int gpus_per_node = 8;

//! tutti's schedules on the cluster. alpha: NCCL's per-hop hardware latencies for its LL protocol
//! (the one it uses where latency rules): NVLink 0.6 us, network 2.7 us (hwLatencies, ring LL);
//! beta: published link rates — NVLink 4 on H100 SXM 18 links x 25 GB/s = 450 GB/s per direction,
//! NDR 400 Gb/s = 50 GB/s per NIC, one NIC per GPU (DGX H100: node_links 8); gamma: H100 HBM3
//! 3.35 TB/s for the 3 bytes an in-place reduction reads and writes per byte (1.1 TB/s).
cost_parameters cluster() {
  cost_parameters p;
  p.intra = {0.6e-6, 1.0 / 450e9};
  p.inter = {2.7e-6, 1.0 / 50e9};
  p.gamma = 1.0 / 1.1e12;
  // direct's epochs: a flag written over NVLink and polled, one NVLink hop (NCCL's LL latency)
  p.alpha_sync = p.intra.alpha;
  // NCCL's base latency of a ring/tree allreduce (baseLatencies, LL): launch and first step;
  // every GPU collective pays it, so tutti's schedules pay it too (it moves no crossover).
  p.base_latency = 6.6e-6;
  p.machine.node_links = gpus_per_node;
  p.machine.message_copies = 1;  // NVLink moves a message's byte once; direct's reads cost the same
  // Without the argument check (TUTTI_CHECK=0): tutti's check sends a descriptor to every peer,
  // n - 1 messages per collective, which main() prints separately (it would swamp every column).
  p.machine.check = tutti::tuner::argument_check::none;
  return p;
}
//! NCCL's model of its ring and tree allreduce (tuning.cc) for this topology: Hopper, x86 Intel
//! CPUs, nNodes > 2 (so bw = the graph's bwInter), 16 channels of 24 GB/s (NET_BW is 12 per
//! 100 Gb/s: 8 NDR NICs = 384 GB/s, two channels per NIC), balanced trees, no NVLS/CollNet.
struct nccl_topology {
  int nodes;
  int channels = 16;
  double bw_inter = 24.0;  // GB/s per channel
};
enum proto { ll, ll128, simple };
constexpr const char* proto_name[] = {"LL", "LL128", "Simple"};
constexpr double base_lat[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};          // tree, ring
constexpr double nvlink_lat[2][3] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}};          // hwLatencies[NVLINK]
constexpr double net_lat[2][3] = {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}};            // hwLatencies[NET]
constexpr double ll_max_bw = 20.4;                                                // llMaxBws[Intel][N4]
constexpr double per_ch_ring_ll128 = 36.7, per_ch_tree = 36.0, per_ch_tree_ll128 = 29.0;  // Hopper, N4
constexpr double tree_correction[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

int log2i(unsigned long long v) {
  int l = -1;
  while (v) v >>= 1, ++l;
  return l;
}

//! Microseconds NCCL predicts for allreduce of `bytes` by ring (tree = false) or tree with `p`.
double nccl_time_us(const nccl_topology& t, bool tree, proto p, double bytes) {
  const int ranks = t.nodes * gpus_per_node, a = tree ? 0 : 1;
  double bus = t.channels * t.bw_inter;
  if (!tree && p == ll) bus = std::min(ll_max_bw, bus * .5);
  if (!tree && p == ll128) bus = std::min(bus * .92, t.channels * per_ch_ring_ll128);
  if (tree) bus = std::min(bus * .92, t.channels * per_ch_tree);
  if (tree && p == ll) bus = std::min(bus / 3.8, ll_max_bw);
  if (tree && p == ll128) bus = std::min(bus * 120.0 / 128.0, t.channels * per_ch_tree_ll128);
  const double nsteps = 2.0 * (ranks - 1);
  const double algbw = tree ? bus * .5 : bus * ranks / nsteps;
  double lat = base_lat[a][p];
  if (!tree) {
    const double net_overhead = p == simple ? 3.0 : 1.0;  // getNetOverhead: Intel x86, x3 for Simple
    const double intra = std::max(nvlink_lat[a][p], net_overhead), inter_steps = 2.0 * (t.nodes - 1);
    lat += (nsteps - inter_steps) * intra + inter_steps * net_lat[a][p];
  } else {
    lat += 2 * ((gpus_per_node - 1) * nvlink_lat[a][p] + log2i(static_cast<unsigned>(t.nodes)) * net_lat[a][p]);
  }
  double bw = algbw;
  const int log_size = log2i(static_cast<unsigned long long>(bytes) >> 6);
  if (tree && log_size >= 0 && log_size < 23) bw *= tree_correction[p][log_size];
  if (!tree && p == simple && bytes / (t.channels * ranks) >= 64) lat *= 1.4;  // ring plateau, compcap >= 80
  return lat + bytes / (1000 * bw);
}

std::string size_text(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024 && u < 3) b /= 1024, ++u;
  char s[32];
  std::snprintf(s, sizeof s, "%g %s", b, unit[u]);
  return s;
}
std::string time_text(double us) {
  char s[32];
  if (us < 1000) std::snprintf(s, sizeof s, "%.1f us", us);
  else if (us < 1e6) std::snprintf(s, sizeof s, "%.2f ms", us / 1e3);
  else std::snprintf(s, sizeof s, "%.2f s", us / 1e6);
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<int> node_counts{8, 64, 256, 1024};
  bool csv = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--csv") csv = true;
    else if (a == "--nodes" && i + 1 < argc) {
      node_counts.clear();
      for (char* s = argv[++i]; *s;) node_counts.push_back(static_cast<int>(std::strtol(s, &s, 10))), s += *s == ',';
    } else {
      std::fprintf(stderr, "usage: tutti-model-at-scale [--nodes 8,64,256,1024] [--csv]\n");
      return 2;
    }
  }
  const std::vector<std::string_view> candidates{"ring",
                                                 "tree",
                                                 "halving_doubling",
                                                 "hierarchical<ring, ring>",
                                                 "hierarchical<direct, ring>",
                                                 "hierarchical<direct, tree>",
                                                 "hierarchical<direct, halving_doubling>"};
  std::vector<double> sizes;
  for (double b = 8; b <= 1024.0 * 1024 * 1024; b *= 8) sizes.push_back(b);
  sizes.push_back(4.0 * 1024 * 1024 * 1024);
  const cost_parameters p = cluster();

  if (csv) std::printf("nodes,bytes,algorithm,predicted_us\n");
  for (int nodes : node_counts) {
    const tutti::tuner::layout where{nodes * gpus_per_node, nodes, gpus_per_node};
    const nccl_topology topo{nodes};
    if (!csv) {
      cost_parameters checked = p;
      checked.machine.check = tutti::tuner::argument_check::exchange;
      const double check_us = (*tutti::tuner::predicted_seconds(checked, "ring", collective::allreduce, where, 8) -
                               *tutti::tuner::predicted_seconds(p, "ring", collective::allreduce, where, 8)) * 1e6;
      std::printf("\n### %d nodes x %d GPUs (%d ranks)\n\nWithout the argument check (TUTTI_CHECK=0); tutti's check as it is "
                  "(a descriptor to each of %d peers) would add %s to every collective.\n\n| size |",
                  nodes, gpus_per_node, where.world, where.world - 1, time_text(check_us).c_str());
      for (auto c : candidates) std::printf(" %.*s |", static_cast<int>(c.size()), c.data());
      std::printf(" tutti winner | NCCL ring | NCCL tree | NCCL picks |\n|---:|");
      for (std::size_t i = 0; i < candidates.size(); ++i) std::printf("---:|");
      std::printf(":---|---:|---:|:---|\n");
    }
    for (double bytes : sizes) {
      std::string best;
      double best_us = 1e300;
      std::vector<double> us;
      for (auto c : candidates) {
        const auto s = tutti::tuner::predicted_seconds(p, c, collective::allreduce, where, bytes);
        us.push_back(s ? *s * 1e6 : -1);
        if (s && us.back() < best_us) best_us = us.back(), best = std::string(c);
        if (csv) std::printf("%d,%.0f,\"%.*s\",%.3f\n", nodes, bytes, static_cast<int>(c.size()), c.data(), us.back());
      }
      double ring_us = 1e300, tree_us = 1e300;
      int ring_p = 0, tree_p = 0;
      for (int q = ll; q <= simple; ++q) {
        const double r = nccl_time_us(topo, false, static_cast<proto>(q), bytes), t = nccl_time_us(topo, true, static_cast<proto>(q), bytes);
        if (r < ring_us) ring_us = r, ring_p = q;
        if (t < tree_us) tree_us = t, tree_p = q;
      }
      if (csv) {
        std::printf("%d,%.0f,\"nccl ring/%s\",%.3f\n%d,%.0f,\"nccl tree/%s\",%.3f\n", nodes, bytes, proto_name[ring_p], ring_us,
                    nodes, bytes, proto_name[tree_p], tree_us);
        continue;
      }
      std::printf("| %s |", size_text(bytes).c_str());
      for (double u : us) std::printf(" %s |", u < 0 ? "—" : time_text(u).c_str());
      std::printf(" **%s** | %s (%s) | %s (%s) | %s |\n", best.c_str(), time_text(ring_us).c_str(), proto_name[ring_p],
                  time_text(tree_us).c_str(), proto_name[tree_p], tree_us < ring_us ? "tree" : "ring");
    }
  }
  return 0;
}
