//! @file export_peer_tables.cpp  Writes the export checks' table (tests/tuner/export_fixture.hpp)
//! as nccl.csv, ucc.conf (and ucc-before-1.8.conf), ompi.rules and ompi.json into the folder given,
//! for check_nccl.sh, check_ucc.sh and check_ompi.sh.
#include <fstream>
#include <string>
#include <tutti/tuner/export.hpp>

#include "../export_fixture.hpp"

int main(int argc, char** argv) {
  using namespace tutti::tuner;
  const std::string dir = argc > 1 ? argv[1] : ".";
  const table t = export_fixture::make();
  ucc_export_options before_1_8;
  before_1_8.allreduce_ring = false;
  std::ofstream(dir + "/ucc-before-1.8.conf") << to_ucc_conf(t, before_1_8);
  std::ofstream(dir + "/nccl.csv") << export_table(t, "nccl");
  std::ofstream(dir + "/ucc.conf") << export_table(t, "ucc");
  std::ofstream(dir + "/ompi.rules") << export_table(t, "ompi");
  std::ofstream(dir + "/ompi.json") << export_table(t, "ompi-json");
  return 0;
}
