//! @file tuned_tables.hpp  Tuning tables for algorithm::tuned's tests: rows that switch candidates
//! at several sizes, for every layout of up to 9 ranks, handed to tuned through its source override.
#pragma once
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <tutti/algorithm/tuned.hpp>
#include <tutti/tuner/table.hpp>

namespace tutti::testing {

//! Where the switching tables change candidate: ranges [0, 63], [64, 4095], [4096, 65535], [65536, inf].
inline constexpr std::array<std::uint64_t, 3> tuned_boundaries = {64, 4096, 65536};

//! Rows for every layout of 1..9 ranks (any node count; ranks per node 0 when uneven): per
//! collective and dtype class, four ranges that rotate through the candidates having the collective
//! (hierarchical ones only on even nodes), the integer class one step further than float; direct
//! and halving_doubling rows carry tuning values (so rows' overrides reach the schedules).
template <class Tuned, class Ctx>
tuner::table switching_table(std::string source = "the switching test table") {
  tuner::table t;
  t.source = std::move(source);
  const auto candidates = Tuned::template candidates_for<Ctx>();
  for (int world = 1; world <= 9; ++world)
    for (int nodes = 1; nodes <= world; ++nodes) {
      const tuner::layout where{world, nodes, world % nodes == 0 ? world / nodes : 0};
      for (std::size_t k = 0; k < tuner::collective_kinds; ++k) {
        std::vector<std::string_view> having;
        for (const auto& c : candidates)
          if (c.has[k] && (where.ranks_per_node != 0 || !c.name.starts_with("hierarchical"))) having.push_back(c.name);
        if (having.empty()) continue;
        for (int cls = 0; cls < 2; ++cls)
          for (std::size_t range = 0; range <= tuned_boundaries.size(); ++range) {
            tuner::row r;
            r.collective_kind = static_cast<collective>(k);
            r.dtypes = static_cast<tuner::dtype_class>(cls);
            r.min_bytes = range == 0 ? 0 : tuned_boundaries[range - 1];
            r.max_bytes = range == tuned_boundaries.size() ? std::numeric_limits<std::uint64_t>::max()
                                                           : tuned_boundaries[range] - 1;
            r.where = where;
            r.algorithm = std::string(having[(range + static_cast<std::size_t>(cls)) % having.size()]);
            if (r.algorithm == "direct") r.tuning.push_back({"direct.one_shot_bytes", 256});
            if (r.algorithm == "halving_doubling") r.tuning.push_back({"halving_doubling.tree_reduce_bytes", 1024});
            t.rows.push_back(std::move(r));
          }
      }
    }
  return t;
}

//! The algorithm a table names for one call, by a plain scan of its rows (the oracle the binary
//! search is checked against); empty when no row covers it.
inline std::string table_says(const tuner::table& t, const tuner::layout& where, collective c, tuner::dtype_class d,
                              std::uint64_t bytes) {
  for (const auto& r : t.rows)
    if (r.where == where && r.collective_kind == c && r.dtypes == d && r.min_bytes <= bytes && bytes <= r.max_bytes)
      return r.algorithm;
  return {};
}

//! Tables by tuned<...> name, served to every rank by algorithm::tuned's source override.
inline std::map<std::string, std::shared_ptr<const tuner::table>, std::less<>>& tuned_tables() {
  static std::map<std::string, std::shared_ptr<const tuner::table>, std::less<>> tables;
  return tables;
}

//! Registers World's switching table and makes the source override serve the registered ones (a
//! tuned<...> not registered reads the built-in table).
template <class World>
bool serve_switching_table() {
  using comm = typename World::communicator_type;
  using tuned_type = typename comm::algorithm_type;
  tuned_tables()[std::string(tuned_type::name)] =
      std::make_shared<const tuner::table>(switching_table<tuned_type, typename comm::context_type>());
  algorithm::tuned_table::source_override() = [](int, std::string_view name) {
    const auto found = tuned_tables().find(name);
    return found == tuned_tables().end() ? algorithm::tuned_table::built_in() : found->second;
  };
  return true;
}

//! Sets the source override for one test and puts the previous one back after it.
class tuned_source_scope {
 public:
  explicit tuned_source_scope(algorithm::tuned_table::source s) : before_(algorithm::tuned_table::source_override()) {
    algorithm::tuned_table::source_override() = std::move(s);
  }
  ~tuned_source_scope() { algorithm::tuned_table::source_override() = std::move(before_); }
  tuned_source_scope(const tuned_source_scope&) = delete;
  tuned_source_scope& operator=(const tuned_source_scope&) = delete;

 private:
  algorithm::tuned_table::source before_;
};

}  // namespace tutti::testing
