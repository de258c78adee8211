//! @file command_line.hpp  tutti-run's command line, read into its options (tools/tutti_run.cpp
//! prints the synopsis and exits 2 on a refusal). Apart from the program so that a fuzzer
//! (tests/fuzz/tutti_run_args_fuzz.cpp) can drive it: every refusal is a usage_failure, never an
//! exit from inside.
#pragma once
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tutti/bootstrap/job_name.hpp"

namespace tutti::run_tool {

inline constexpr int max_ranks = 65536;
inline constexpr int max_restarts = 1000;
inline constexpr double max_grace = 24 * 3600;

//! A command line tutti-run refuses: what() is the one sentence it prints before its synopsis.
struct usage_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail(const std::string& why) { throw usage_failure(why); }

struct options {
  int ranks = 0;
  int ranks_per_node = 0;  //!< 0: one node, TUTTI_NODE_ID left as it is
  bool bind_cores = false;  //!< --bind core: rank k on the (k mod C)-th allowed CPU
  std::string job_id;
  bool job_id_given = false;
  double grace_seconds = 3.0;
  double linger_seconds = 2.0;
  bool prefix = true;
  int max_restarts = 0;  //!< --max-restarts: whole-job restarts after a failure
  bool launcher = false;  //!< --launcher: the command starts the whole job itself (one "rank", no variables)
  char** command = nullptr;  //!< prog and its arguments, null-terminated (a tail of argv)
  bool help = false;         //!< -h / --help: nothing else was read
};

//! An option's whole value as an integer in [lo, hi], else the usage error "NAME takes WHAT from
//! LO to HI, got 'VALUE'".
[[nodiscard]] inline int count_option(std::string_view name, std::string_view value, const char* what, int lo, int hi) {
  int k = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), k);
  if (ec != std::errc{} || end != value.data() + value.size() || k < lo || k > hi)
    fail(std::string(name) + " takes " + what + " from " + std::to_string(lo) + " to " + std::to_string(hi) +
                ", got '" + std::string(value) + "'");
  return k;
}

//! tutti-run's options from its command line; the program is argv's tail from `command` on.
//! Throws usage_failure with one sentence (the caller adds the synopsis) for what it refuses.
[[nodiscard]] inline options parse_command_line(int argc, char** argv) {
  options opt;
  bool have_ranks = false;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;  // the program
    if (arg == "-h" || arg == "--help") {
      opt.help = true;
      return opt;
    }
    if (arg == "--no-prefix") {
      opt.prefix = false;
      continue;
    }
    if (arg == "--launcher") {
      opt.launcher = true;
      continue;
    }
    // Options with a value: "-n 4", "-n4", "--grace 1", "--grace=1".
    std::string_view name = arg;
    std::string_view value;
    bool inline_value = false;
    if (arg.starts_with("--")) {
      if (const auto eq = arg.find('='); eq != std::string_view::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        inline_value = true;
      }
    } else if (arg.starts_with("-n") && arg.size() > 2) {
      name = "-n";
      value = arg.substr(2);
      inline_value = true;
    }
    if (name != "-n" && name != "--job-id" && name != "--grace" && name != "--linger" && name != "--ranks-per-node" &&
        name != "--bind" && name != "--max-restarts")
      fail("unknown option '" + std::string(arg) + "'");
    if (!inline_value) {
      if (i + 1 >= argc) fail("option " + std::string(name) + " needs a value");
      value = argv[++i];
    }
    if (name == "-n") {
      opt.ranks = count_option(name, value, "a number of ranks", 1, max_ranks);
      have_ranks = true;
    } else if (name == "--ranks-per-node") {
      opt.ranks_per_node = count_option(name, value, "a number", 1, max_ranks);
    } else if (name == "--max-restarts") {
      opt.max_restarts = count_option(name, value, "a number", 0, max_restarts);
    } else if (name == "--bind") {
      if (value != "core" && value != "none") fail("--bind takes core or none, got '" + std::string(value) + "'");
      opt.bind_cores = value == "core";
    } else if (name == "--job-id") {
      if (!tutti::job_name::valid(value))
        fail(std::string("--job-id takes ") + tutti::job_name::rule + ", got '" + std::string(value) + "'");
      opt.job_id = value;
      opt.job_id_given = true;
    } else {  // --grace, --linger
      const std::string text(value);
      char* end = nullptr;
      errno = 0;
      const double g = text.empty() ? -1 : std::strtod(text.c_str(), &end);
      if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(g) || g < 0 || g > max_grace)
        fail(std::string(name) + " takes a number of seconds from 0 to " + std::to_string(int(max_grace)) +
                    ", got '" + text + "'");
      (name == "--grace" ? opt.grace_seconds : opt.linger_seconds) = g;
    }
  }
  if (opt.launcher) {
    if (have_ranks || opt.ranks_per_node || opt.bind_cores || opt.job_id_given)
      fail("--launcher runs one command that starts the job itself: -n, --ranks-per-node, --bind and --job-id "
                  "are its to decide");
    opt.ranks = 1;
    opt.prefix = false;
  } else if (!have_ranks) {
    fail("missing -n N, the number of ranks");
  }
  if (i >= argc) fail("no program to run");
  opt.command = argv + i;
  return opt;
}

}  // namespace tutti::run_tool
