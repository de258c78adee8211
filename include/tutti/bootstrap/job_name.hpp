//! @file job_name.hpp  The one rule for job ids: their alphabet and length, how a launcher's id
//! becomes one, and how transport::shm names its segments after it.
//!
//! A job id names what a job leaves in shared places (/dev/shm/tutti-<job>.<rank>), so two jobs
//! on one host must never build the same name, and tutti-run must be able to find a job's
//! leftovers by prefix. Hence:
//! - alphabet [A-Za-z0-9_-]: no '/', and no '.', which ends the job part of a segment name, so
//!   job "a" never matches the segments of job "a.b" or "a-b" (the prefix is "tutti-a.");
//! - at most max_length characters for an id a user or launcher gives; transports may append
//!   suffixes to it (multi_node's per-node shm jobs), up to what a segment name can hold.
//! Who gives the id decides what happens to one that breaks the rule: a launcher's own id (Slurm,
//! PMIx, Open MPI, torchrun) is not the user's to fix, so it is made into one (from_launcher);
//! an id the user chose (TUTTI_JOB_ID, tutti-run --job-id) is refused, naming it and the rule.
//!
//! Only the standard library and core/error.hpp: tools/tutti_run.cpp includes this header too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "tutti/core/error.hpp"

namespace tutti::job_name {

//! Longest id a user or launcher gives (TUTTI_JOB_ID, tutti-run --job-id, a launcher's id).
inline constexpr std::size_t max_length = 64;
//! Longest id a segment can be named after: "/tutti-" + id + "." + a rank below 2^24 (8 digits)
//! within NAME_MAX (255). Leaves room for suffixes transports append to a max_length id.
inline constexpr std::size_t max_segment_job_length = 255 - 6 - 1 - 8;
//! The rule in words, for messages.
inline constexpr const char* rule = "1 to 64 characters of [A-Za-z0-9_-]";

[[nodiscard]] constexpr bool allowed(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

//! Whether `id` has only allowed characters and 1 to `longest` of them.
[[nodiscard]] constexpr bool valid(std::string_view id, std::size_t longest = max_length) noexcept {
  if (id.empty() || id.size() > longest) return false;
  for (char c : id)
    if (!allowed(c)) return false;
  return true;
}

//! `id` when it is valid; else invalid_argument naming `source` (say, "TUTTI_JOB_ID") and the rule.
[[nodiscard]] inline std::string checked(std::string_view id, std::string_view source) {
  if (!valid(id))
    throw invalid_argument(std::string(source) + "='" + std::string(id) + "' is not a valid job id: a job id is " +
                           rule + " (it names the job's shared-memory segments)");
  return std::string(id);
}

//! A launcher's id made into a job id: characters outside the alphabet become '_'; an id longer
//! than max_length keeps its first 47 characters and ends in '-' and 16 hex digits of a hash of
//! the whole, so two long ids that differ only at the end still give different job ids.
[[nodiscard]] inline std::string from_launcher(std::string_view launcher_id) {
  std::string id(launcher_id);
  for (char& c : id)
    if (!allowed(c)) c = '_';
  if (id.empty()) id.push_back('_');
  if (id.size() <= max_length) return id;
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a over the launcher's own bytes
  for (char c : launcher_id) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char tail[18];
  std::snprintf(tail, sizeof tail, "-%016llx", static_cast<unsigned long long>(hash));
  id.resize(max_length - 17);
  return id + tail;
}

//! What every segment of job `job` is named after: "tutti-<job>." (tutti-run removes by it).
[[nodiscard]] inline std::string segment_prefix(std::string_view job) {
  std::string prefix = "tutti-";  // appended, not prepended: GCC 12 warns (-Wrestrict) on "..." + string&&
  prefix += job;
  prefix += '.';
  return prefix;
}

//! Rank `rank`'s segment of job `job`, as shm_open takes it: "/tutti-<job>.<rank>".
[[nodiscard]] inline std::string segment_name(std::string_view job, int rank) {
  std::string name = "/";
  name += segment_prefix(job);
  name += std::to_string(rank);
  return name;
}

}  // namespace tutti::job_name
