//! @file tutti_run_args_fuzz.cpp  libFuzzer target: tutti-run's command line (tools/tutti_run/command_line.hpp).
//!
//! The input is split at NUL bytes into argv[1..]. Asserted besides the sanitizers' checks:
//! parse_command_line returns, or throws usage_failure with a non-empty sentence, nothing else; a
//! returned command lies inside argv and is not empty; counts are in their documented ranges.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tutti_run/command_line.hpp"
#include "require.hpp"

using tutti_fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> words{"tutti-run"};
  std::string word;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      words.push_back(word);
      word.clear();
    } else {
      word += static_cast<char>(data[i]);
    }
  }
  if (!word.empty()) words.push_back(word);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const int argc = static_cast<int>(words.size());
  using namespace tutti::run_tool;
  try {
    const options o = parse_command_line(argc, argv.data());
    if (o.help) return 0;
    require(o.command >= argv.data() + 1 && o.command < argv.data() + argc && *o.command != nullptr);
    require(o.ranks >= 1 && o.ranks <= max_ranks);
    require(o.ranks_per_node >= 0 && o.ranks_per_node <= max_ranks);
    require(o.max_restarts >= 0 && o.max_restarts <= max_restarts);
    require(o.grace_seconds >= 0 && o.grace_seconds <= max_grace && o.linger_seconds >= 0 && o.linger_seconds <= max_grace);
    require(!o.launcher || o.ranks == 1);
  } catch (const usage_failure& e) {
    require(std::string(e.what()).size() > 10);
  } catch (...) {
    require(false);
  }
  return 0;
}
