//! @file environment_fuzz.cpp  libFuzzer target: every TUTTI_* and launcher variable tutti parses.
//!
//! A job's environment comes from a user's shell, a launcher or a scheduler: any value may be empty,
//! huge, negative, fractional or binary. Each input line sets one variable (its first byte chooses
//! which, the rest is the value); then every reader of the environment runs. Asserted besides the
//! sanitizers' checks: each reader returns or throws tutti::invalid_argument whose message names a
//! variable that was set, and nothing else escapes (no std::invalid_argument from a stoi, no crash).
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/bootstrap/interface_filter.hpp"
#include "tutti/bootstrap/node.hpp"
#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/bootstrap/tcp_store.hpp"
#include "tutti/communicator/options.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/fusion/autotuned.hpp"
#include "tutti/fusion/start.hpp"
#include "tutti/fusion/threshold.hpp"
#include "tutti/trainer/transport_choice.hpp"
#include "tutti/transport/shm/options.hpp"
#include "tutti/transport/ucx/options.hpp"
#include "require.hpp"

namespace {

using tutti_fuzz::require;

//! tutti's own variables, then every launcher's from rank_info's table (so a launcher added there
//! is fuzzed too), each once.
const std::vector<const char*> variables = [] {
  std::vector<const char*> out{
      "TUTTI_TIMEOUT", "TUTTI_CHUNK_BYTES", "TUTTI_CHECK", "TUTTI_STALL_TIMEOUT", "TUTTI_STALL_WARN",
      "TUTTI_JOB_ID", "TUTTI_NODE_ID", "MASTER_ADDR", "MASTER_PORT", "TUTTI_STORE_ADDR", "TUTTI_STORE_PORT",
      "TUTTI_STORE_MAX_FRAME", "TUTTI_NET_IFACE", "TUTTI_NET_PROBE_TIMEOUT", "TUTTI_LOG", "TUTTI_FUSION_THRESHOLD",
      "TUTTI_CYCLE_TIME", "TUTTI_FUSION_OVERLAP", "TUTTI_AUTOTUNE", "TUTTI_AUTOTUNE_MAX_SAMPLES",
      "TUTTI_AUTOTUNE_SEED", "TUTTI_SHM_SLOTS", "TUTTI_SHM_SLOT_BYTES", "TUTTI_SHM_POOL_BYTES", "TUTTI_TRANSPORT",
      "TUTTI_UCX_RNDV_THRESH", "SLURM_JOB_NUM_NODES"};
  const auto add = [&](const char* v) {
    if (v && std::find_if(out.begin(), out.end(), [&](const char* o) { return std::string_view(o) == v; }) == out.end())
      out.push_back(v);
  };
  for (const auto& l : tutti::detail::launchers)
    for (const char* v : {l.marker, l.rank, l.size, l.local_rank, l.local_size}) add(v);
  return out;
}();

//! Runs one reader: it returns, or refuses naming one of the variables set.
template <class F>
void reads(const std::vector<std::string_view>& set, F&& f) {
  try {
    f();
  } catch (const tutti::invalid_argument& e) {
    const std::string_view what = e.what();
    bool named = false;
    for (auto v : set) named = named || what.find(v) != std::string_view::npos;
    require(named);
  } catch (...) {
    require(false);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (const char* v : variables) ::unsetenv(v);
  std::vector<std::string_view> set;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  for (std::size_t at = 0; at < in.size();) {
    auto end = in.find('\n', at);
    if (end == std::string_view::npos) end = in.size();
    const auto line = in.substr(at, end - at);
    at = end + 1;
    if (line.empty()) continue;
    const char* name = variables[static_cast<unsigned char>(line[0]) % variables.size()];
    const std::string value(line.substr(1));
    if (value.find('\0') != std::string::npos) continue;  // an environment value cannot hold one
    ::setenv(name, value.c_str(), 1);
    set.push_back(name);
  }
  using namespace tutti;
  reads(set, [] { (void)communicator_options::from_env(); });
  reads(set, [] { (void)rank_info_from_env(); });
  reads(set, [] { (void)node_id_from_env(); });
  reads(set, [] { (void)bootstrap::store_address_from_env(); });
  reads(set, [] { (void)bootstrap::interface_filter::from_env(); });
  reads(set, [] { (void)transport::shm_options::from_env(); });
  reads(set, [] { (void)transport::ucx_options::from_env(); });
  reads(set, [] { (void)fusion::autotune_settings::from_env(); });
  reads(set, [] {
    (void)fusion::settings_from_env<fusion::threshold<>>(std::chrono::seconds(60), std::chrono::seconds(300));
  });
  reads(set, [] { (void)detail::parse_log_level(); });
  reads(set, [] { (void)trainer::transport_from_env(); });
  return 0;
}
