//! @file export_peer_tables.cpp  Writes one tuning table (every mapping rule the peer checks use)
//! as nccl.csv, ucc.conf (and ucc-before-1.8.conf), ompi.rules and ompi.json into the folder given,
//! for check_nccl.sh, check_ucc.sh and check_ompi.sh.
#include <fstream>
#include <string>

#include <tutti/tuner/export.hpp>

using namespace tutti;
using namespace tutti::tuner;

namespace {
constexpr std::uint64_t inf = exporting::unbounded;
row make_row(collective c, std::uint64_t lo, std::uint64_t hi, layout l, std::string alg) {
  row r;
  r.collective_kind = c;
  r.min_bytes = lo;
  r.max_bytes = hi;
  r.where = l;
  r.algorithm = std::move(alg);
  return r;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  const layout one_by_two{2, 1, 2}, one_by_four{4, 1, 4}, two_by_two{4, 2, 2}, four_by_one{4, 4, 1};
  table t;
  t.source = "tests/tuner/peers/export_peer_tables.cpp";
  t.made.transport = "multi_node";
  t.rows = {
      make_row(collective::allreduce, 0, inf, one_by_two, "tree"),
      make_row(collective::allreduce, 0, 2047, one_by_four, "halving_doubling"),
      make_row(collective::allreduce, 2048, 65535, one_by_four, "direct"),
      make_row(collective::allreduce, 65536, inf, one_by_four, "ring"),
      make_row(collective::broadcast, 0, inf, one_by_four, "halving_doubling"),
      make_row(collective::alltoall, 0, inf, one_by_four, "halving_doubling"),
      make_row(collective::barrier, 0, inf, one_by_four, "tree"),
      make_row(collective::reduce_scatter, 0, 1019, one_by_four, "halving_doubling"),
      make_row(collective::reduce_scatter, 1020, inf, one_by_four, "ring"),
      make_row(collective::allgather, 0, inf, one_by_four, "ring"),
      make_row(collective::allgather, 0, inf, two_by_two, "ring"),
      make_row(collective::allreduce, 0, 4095, two_by_two, "hierarchical<direct, tree>"),
      make_row(collective::allreduce, 4096, inf, two_by_two, "automatic"),
      make_row(collective::allreduce, 0, inf, four_by_one, "hierarchical<direct, ring>"),
      make_row(collective::reduce_scatter, 0, inf, four_by_one, "halving_doubling"),
      make_row(collective::broadcast, 0, inf, four_by_one, "ring"),
  };
  t.rows[5].tuning = {{"halving_doubling.bruck_block_bytes", 512}};
  ucc_export_options before_1_8;
  before_1_8.allreduce_ring = false;
  std::ofstream(dir + "/ucc-before-1.8.conf") << to_ucc_conf(t, before_1_8);
  for (const char* format : {"nccl", "ucc", "ompi", "ompi-json"}) {
    const std::string name = std::string(format) == "nccl"  ? "nccl.csv"
                             : std::string(format) == "ucc" ? "ucc.conf"
                             : std::string(format) == "ompi" ? "ompi.rules"
                                                             : "ompi.json";
    std::ofstream(dir + "/" + name) << export_table(t, format);
  }
  return 0;
}
