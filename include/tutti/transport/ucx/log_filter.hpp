//! @file log_filter.hpp  UCX's own messages about broken connections, kept off the terminal.
//!
//! When a peer dies, aborts or leaves, UCX prints its view of the broken socket before tutti's
//! error handler runs: "connect(fd=.., dest_addr=..) failed: Connection refused", with advice such
//! as "try to increase net.core.somaxconn" that sends users the wrong way. tutti reports every such
//! break itself, as tutti::peer_lost naming the rank. So, in a process that uses transport::ucx,
//! UCX's error and warning lines about connections go to tutti's debug log (TUTTI_LOG=debug shows
//! them) instead of UCX's log file (stdout by default); everything else UCX says passes through.
#pragma once
#include <ucs/debug/log_def.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include "tutti/core/log.hpp"

namespace tutti::transport::ucx_detail {

//! Whether UCX's message is about a connection that broke or could not be made.
[[nodiscard]] inline bool connection_noise(std::string_view text) noexcept {
  for (std::string_view phrase : {"connect(", "Connection refused", "Connection reset", "Broken pipe",
                                  "Endpoint timeout", "somaxconn", "Destination is unreachable", "will not be handled"})
    if (text.find(phrase) != std::string_view::npos) return true;
  return false;
}

inline ucs_log_func_rc_t filter_connection_noise(const char* file, unsigned line, const char*, ucs_log_level_t level,
                                                 const ucs_log_component_config_t*, const char* format, va_list ap) {
  if (level > UCS_LOG_LEVEL_WARN) return UCS_LOG_FUNC_RC_CONTINUE;
  char text[512];
  va_list copy;
  va_copy(copy, ap);
  std::vsnprintf(text, sizeof text, format, copy);
  va_end(copy);
  if (!connection_noise(text)) return UCS_LOG_FUNC_RC_CONTINUE;
  if (log_enabled(log_level::debug))
    log(log_level::debug, -1, std::string("transport::ucx: UCX (") + file + ":" + std::to_string(line) +
                                  ", reported by tutti as a lost peer): " + text);
  return UCS_LOG_FUNC_RC_STOP;
}

//! Installs the filter once per process (UCX's handler stack is process-wide).
inline void install_log_filter() {
  static std::once_flag once;
  std::call_once(once, [] { ucs_log_push_handler(&filter_connection_noise); });
}

}  // namespace tutti::transport::ucx_detail
