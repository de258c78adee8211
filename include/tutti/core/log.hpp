//! @file log.hpp  The one logger: TUTTI_LOG=warn|info|debug|trace, every line prefixed with the rank.
#pragma once
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"

namespace tutti {

enum class log_level : int { warn = 0, info = 1, debug = 2, trace = 3 };

namespace detail {
inline log_level parse_log_level() {
  auto v = config::raw("TUTTI_LOG");
  if (!v || *v == "warn") return log_level::warn;
  if (*v == "info") return log_level::info;
  if (*v == "debug") return log_level::debug;
  if (*v == "trace") return log_level::trace;
  throw invalid_argument("TUTTI_LOG='" + *v + "' is not one of warn, info, debug, trace");
}
inline std::atomic<int>& log_threshold() {
  static std::atomic<int> level{static_cast<int>(parse_log_level())};
  return level;
}
}  // namespace detail

//! True when messages at `level` are printed; check it before building an expensive message.
//! The first call reads TUTTI_LOG and throws invalid_argument for a value that is not a level.
[[nodiscard]] inline bool log_enabled(log_level level) {
  return static_cast<int>(level) <= detail::log_threshold().load(std::memory_order_relaxed);
}

//! Overrides TUTTI_LOG for this process (tests and tools).
inline void set_log_level(log_level level) {
  detail::log_threshold().store(static_cast<int>(level), std::memory_order_relaxed);
}

//! Writes "[tutti <rank>] <level>: <message>" to stderr as one write, so lines of threads and
//! processes sharing a terminal do not interleave mid-line. rank < 0 means "not yet known".
inline void log(log_level level, int rank, std::string_view message) {
  if (!log_enabled(level)) return;
  static constexpr const char* names[] = {"warn", "info", "debug", "trace"};
  std::string line = "[tutti ";
  line += rank < 0 ? std::string("?") : std::to_string(rank);
  line += "] ";
  line += names[static_cast<int>(level)];
  line += ": ";
  line += message;
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

namespace detail {
//! Under a launcher that pipes stdout (tutti-run sets TUTTI_LINE_BUFFERED=1), stdout would be
//! fully buffered: what a rank printed just before it crashed would die in the buffer. Made line
//! buffered before main() runs (this initialiser runs once per program, before anything of the
//! program's own can have written to stdout through stdio in the usual case). TUTTI_LINE_BUFFERED=0
//! or unset leaves stdio alone.
inline const bool stdout_line_buffered = [] {
  const char* v = std::getenv("TUTTI_LINE_BUFFERED");
  if (!v || std::string_view(v) != "1") return false;
  return std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ) == 0;
}();
}  // namespace detail

}  // namespace tutti
