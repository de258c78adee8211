//! @file config.hpp  Reading TUTTI_* environment variables, strictly: a bad value is an error, not a default.
#pragma once
#include <charconv>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "tutti/core/error.hpp"

namespace tutti::config {

//! The raw value of an environment variable, or nullopt when unset or empty.
[[nodiscard]] inline std::optional<std::string> raw(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

//! An integer variable; throws invalid_argument naming the variable when it is not one or is out of range.
[[nodiscard]] inline long long integer(const char* name, long long fallback, long long lo, long long hi) {
  auto v = raw(name);
  if (!v) return fallback;
  long long out = 0;
  const auto* end = v->data() + v->size();
  auto [p, ec] = std::from_chars(v->data(), end, out);
  if (ec != std::errc{} || p != end)
    throw invalid_argument(std::string(name) + "='" + *v + "' is not an integer");
  if (out < lo || out > hi)
    throw invalid_argument(std::string(name) + "=" + *v + " is outside [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  return out;
}

//! A byte size: plain integer with an optional K/M/G suffix (binary units), e.g. "512K", "64M".
[[nodiscard]] inline std::size_t bytes(const char* name, std::size_t fallback, std::size_t lo, std::size_t hi) {
  auto v = raw(name);
  if (!v) return fallback;
  std::string s = *v;
  std::size_t mult = 1;
  switch (s.back()) {
    case 'K': case 'k': mult = 1ull << 10; s.pop_back(); break;
    case 'M': case 'm': mult = 1ull << 20; s.pop_back(); break;
    case 'G': case 'g': mult = 1ull << 30; s.pop_back(); break;
    default: break;
  }
  unsigned long long n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size())
    throw invalid_argument(std::string(name) + "='" + *v + "' is not a byte size (like 4096, 512K, 64M)");
  const auto out = static_cast<std::size_t>(n) * mult;
  if (out < lo || out > hi || (mult > 1 && out / mult != n))
    throw invalid_argument(std::string(name) + "=" + *v + " is outside [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "] bytes");
  return out;
}

//! A duration in seconds (fractions allowed), e.g. TUTTI_TIMEOUT=300 or 0.5.
[[nodiscard]] inline std::chrono::nanoseconds seconds(const char* name, std::chrono::nanoseconds fallback) {
  auto v = raw(name);
  if (!v) return fallback;
  char* end = nullptr;
  const double s = std::strtod(v->c_str(), &end);
  if (end != v->c_str() + v->size() || !(s > 0) || s > 1e7)
    throw invalid_argument(std::string(name) + "='" + *v + "' is not a positive number of seconds");
  // Round up: a positive timeout must never become 0 ns, which would expire every wait at once.
  return std::chrono::nanoseconds(static_cast<long long>(std::ceil(s * 1e9)));
}

//! A duration in milliseconds, zero allowed (fractions too), e.g. TUTTI_CYCLE_TIME=2.5.
[[nodiscard]] inline std::chrono::microseconds milliseconds(const char* name, std::chrono::microseconds fallback,
                                                            std::chrono::microseconds most) {
  auto v = raw(name);
  if (!v) return fallback;
  char* end = nullptr;
  const double ms = std::strtod(v->c_str(), &end);
  const double limit = std::chrono::duration<double, std::milli>(most).count();
  if (end != v->c_str() + v->size() || !(ms >= 0) || ms > limit)
    throw invalid_argument(std::string(name) + "='" + *v + "' is not a number of milliseconds in [0, " +
                           std::to_string(static_cast<long long>(limit)) + "]");
  return std::chrono::microseconds(static_cast<long long>(std::llround(ms * 1000)));
}

//! A boolean: 1/0, true/false, on/off, yes/no.
[[nodiscard]] inline bool flag(const char* name, bool fallback) {
  auto v = raw(name);
  if (!v) return fallback;
  const std::string_view s = *v;
  if (s == "1" || s == "true" || s == "on" || s == "yes") return true;
  if (s == "0" || s == "false" || s == "off" || s == "no") return false;
  throw invalid_argument(std::string(name) + "='" + *v + "' is not a boolean (1/0, true/false, on/off)");
}

//! TUTTI_TIMEOUT: how long any single wait may take before tutti::timeout (default 300 s).
[[nodiscard]] inline std::chrono::nanoseconds timeout() {
  return seconds("TUTTI_TIMEOUT", std::chrono::seconds(300));
}

}  // namespace tutti::config
