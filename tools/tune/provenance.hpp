//! @file provenance.hpp  Where and how a table was measured: every rank's host name, the CPU, the
//! date, tutti's commit, the transport, UCX and kernel versions, the command and how long it took.
#pragma once
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "comm.hpp"
#include "tutti/core/config.hpp"
#include "tutti/tuner/table.hpp"
#if __has_include("tutti_tune_commit.h")
#include "tutti_tune_commit.h"  // generated at build time (tools/tune/commit-header.cmake)
#endif
#if !defined(TUTTI_TUNE_COMMIT)
#define TUTTI_TUNE_COMMIT ""
#endif
#if defined(TUTTI_HAVE_UCX)
#include <ucp/api/ucp.h>
#endif

#ifndef TUTTI_TUNE_COMMIT  // tools/CMakeLists.txt sets it from `git describe --always --dirty` at configure time
#define TUTTI_TUNE_COMMIT ""
#endif

namespace tune {

//! The model name /proc/cpuinfo gives first, and how many processors it lists.
[[nodiscard]] inline std::string cpu_text() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model;
  int processors = 0;
  while (std::getline(in, line)) {
    if (line.starts_with("processor")) ++processors;
    if (model.empty() && line.starts_with("model name")) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  if (model.empty()) return "";
  return model + " (" + std::to_string(processors) + " logical CPUs)";
}

[[nodiscard]] inline std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

[[nodiscard]] inline std::string kernel_text() {
  utsname u{};
  if (uname(&u) != 0) return "";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

//! TUTTI_COMMIT when set (a build from a tarball, or a CI that knows better), else the commit that
//! was built (tools/tune/commit-header.cmake writes it at every build).
[[nodiscard]] inline std::string commit_text() {
  if (auto c = tutti::config::raw("TUTTI_COMMIT"); c && !c->empty()) return *c;
  return TUTTI_TUNE_COMMIT;
}

[[nodiscard]] inline std::string ucx_text() {
#if defined(TUTTI_HAVE_UCX)
  return ucp_get_version_string();
#else
  return "";
#endif
}

//! Every rank's host name (a collective: every rank calls it), sorted, each once.
[[nodiscard]] inline std::vector<std::string> host_names(tune_comm& comm) {
  constexpr std::size_t width = 64;
  std::array<char, width> mine{};
  if (gethostname(mine.data(), width - 1) != 0) std::strcpy(mine.data(), "?");
  std::vector<std::byte> all(width * static_cast<std::size_t>(comm.size()));
  comm.gather_bytes(std::as_bytes(std::span(mine)), all);
  std::vector<std::string> hosts;
  for (std::size_t r = 0; r < static_cast<std::size_t>(comm.size()); ++r) {
    const char* p = reinterpret_cast<const char*>(all.data() + r * width);
    hosts.emplace_back(p, strnlen(p, width));
  }
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  return hosts;
}

//! The provenance of a sweep (a collective: every rank calls it); `command` with what the sweep did.
[[nodiscard]] inline tutti::tuner::provenance gather_provenance(tune_comm& comm, const std::string& transport,
                                                                const std::string& command) {
  tutti::tuner::provenance p;
  p.hosts = host_names(comm);
  p.cpu = cpu_text();
  p.date = utc_now();
  p.tutti_commit = commit_text();
  p.transport = transport;
  p.ucx_version = transport == "shm" ? "" : ucx_text();
  p.kernel = kernel_text();
  p.command = command;
  return p;
}

}  // namespace tune
