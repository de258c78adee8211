//! @file table_source.hpp  Where algorithm::tuned<A...> takes its tuning table from, and the hash that
//! every rank compares: TUTTI_TUNING_FILE, else the built-in default table.
//!
//! The one place tuned touches files and the JSON reader (tuner/table_json.hpp, which needs yaml-cpp:
//! link tutti::yaml, which defines TUTTI_HAVE_YAML; without it only tables made in memory are
//! read). Read once per communicator, when it is made, never per collective.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/tuner/default_table.hpp"
#include "tutti/tuner/table.hpp"
#include "tutti/tuner/table_write.hpp"
#if TUTTI_HAVE_YAML
#include "tutti/tuner/table_json.hpp"
#endif

namespace tutti::algorithm::tuned_table {

//! The hash every rank compares: of the canonical writing (tuner/table_write.hpp), so the same rows
//! spelled differently agree.
[[nodiscard]] inline std::uint64_t hash_of(const tuner::table& t) { return tuner::table_hash(t); }

//! A table read from `path` (TUTTI_TUNING_FILE); every error names the file, the row and its line.
[[nodiscard]] inline std::shared_ptr<const tuner::table> read_file(const std::string& path) {
#if TUTTI_HAVE_YAML
  return std::make_shared<const tuner::table>(tuner::read_table_file(path));
#else
  throw invalid_argument("TUTTI_TUNING_FILE=" + path +
                         ": algorithm::tuned reads tables with yaml-cpp, and this program was built without it "
                         "(link tutti::yaml)");
#endif
}

//! The table shipped with tutti (tuning/default.json, embedded), parsed once per process. Built
//! without yaml-cpp it cannot be read: an empty table that says so (every call runs the fallback).
[[nodiscard]] inline std::shared_ptr<const tuner::table> built_in() {
  static const std::shared_ptr<const tuner::table> parsed = [] {
#if TUTTI_HAVE_YAML
    return std::make_shared<const tuner::table>(
        tuner::read_table(tuner::default_table_json, std::string(tuner::default_table_source)));
#else
    auto t = std::make_shared<tuner::table>();
    t->source = std::string(tuner::default_table_source) + ", not read: built without yaml-cpp (link tutti::yaml)";
    log(log_level::warn, -1, "algorithm::tuned: " + t->source + "; every call runs the fallback candidate");
    return std::shared_ptr<const tuner::table>(std::move(t));
#endif
  }();
  return parsed;
}

//! Where a table comes from instead: (rank, the tuned<...>'s name) -> table. Set it before the
//! communicators are made; an empty function means the files above. Tests give each thread-rank
//! its own table through it, and each tuned<...> its own candidates' rows; a program that must not
//! follow TUTTI_TUNING_FILE sets it too (tutti-tune measures under an empty table of its own).
using source = std::function<std::shared_ptr<const tuner::table>(int rank, std::string_view tuned)>;
inline source& source_override() {
  static source s;
  return s;
}

//! The table rank `rank`'s tuned<...> (`tuned`, its name) reads: the source override's, else
//! TUTTI_TUNING_FILE's, else the built-in one.
[[nodiscard]] inline std::shared_ptr<const tuner::table> load(int rank, std::string_view tuned) {
  if (const auto& s = source_override()) return s(rank, tuned);
  if (const auto path = config::raw("TUTTI_TUNING_FILE")) return read_file(*path);
  return built_in();
}

}  // namespace tutti::algorithm::tuned_table
