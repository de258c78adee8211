//! @file table_source.hpp  Where algorithm::tuned<A...> takes its tuning table from, and the hash that
//! every rank compares: TUTTI_TUNING_FILE, else the built-in default table.
//!
//! The one place tuned touches files and the JSON reader (tuner/table_json.hpp, which needs yaml-cpp:
//! tutti::yaml). Read once per communicator, when it is made, never per collective.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::algorithm::tuned_table {

//! FNV-1a 64 of the rows (placeholder until tuner::table_hash lands from branch `table`).
[[nodiscard]] inline std::uint64_t hash_of(const tuner::table& t) {
  std::uint64_t h = 14695981039346656037ull;
  const auto mix = [&](std::string_view bytes) {
    for (unsigned char ch : bytes) h = (h ^ ch) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // a separator, so "ab","c" differs from "a","bc"
  };
  for (const auto& r : t.rows) {
    mix(std::to_string(static_cast<int>(r.collective_kind)) + " " + std::to_string(static_cast<int>(r.dtypes)) + " " +
        std::to_string(r.min_bytes) + " " + std::to_string(r.max_bytes) + " " + std::to_string(r.where.world) + " " +
        std::to_string(r.where.nodes) + " " + std::to_string(r.where.ranks_per_node));
    mix(r.algorithm);
    for (const auto& v : r.tuning) mix(v.name + "=" + std::to_string(v.value));
  }
  return h;
}

//! A table read from `path` (TUTTI_TUNING_FILE).
[[nodiscard]] inline std::shared_ptr<const tuner::table> read_file(const std::string& path) {
  throw invalid_argument("TUTTI_TUNING_FILE=" + path +
                         ": algorithm::tuned cannot read table files in this build (tuner/table_json.hpp is missing)");
}

//! The table shipped with tutti (tuning/default.json), parsed once per process.
[[nodiscard]] inline std::shared_ptr<const tuner::table> built_in() {
  static const auto parsed = [] {
    auto t = std::make_shared<tuner::table>();
    t->source = "the built-in default table (empty in this build)";
    return std::shared_ptr<const tuner::table>(std::move(t));
  }();
  return parsed;
}

//! Where a table comes from instead, in tests: (rank, the tuned<...>'s name) -> table. Set it
//! before the communicators are made; an empty function means the files above. Threads of one test
//! process may so give their ranks different tables, and each tuned<...> its own candidates' rows.
using source = std::function<std::shared_ptr<const tuner::table>(int rank, std::string_view tuned)>;
inline source& testing_source() {
  static source s;
  return s;
}

//! The table rank `rank`'s tuned<...> (`tuned`, its name) reads: the testing source's, else
//! TUTTI_TUNING_FILE's, else the built-in one.
[[nodiscard]] inline std::shared_ptr<const tuner::table> load(int rank, std::string_view tuned) {
  if (const auto& s = testing_source()) return s(rank, tuned);
  if (const auto path = config::raw("TUTTI_TUNING_FILE")) return read_file(*path);
  return built_in();
}

}  // namespace tutti::algorithm::tuned_table
