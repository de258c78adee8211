//! @file selection.hpp  A table compiled for one communicator: per collective and dtype class, the
//! size ranges' upper bounds in order, searched in O(log rows) with no allocation per call.
//!
//! algorithm::tuned<A...> compiles its table once, when the communicator is made (the layout is
//! known then: the node map), and every call is a binary search over a few ranges. The candidates
//! are the algorithms compiled into tuned<A...>, by name; a row naming another one, or one that
//! lacks the row's collective, is refused here with the row and its line. A collective with no rows
//! for this layout is answered from the table's samples of other layouts, interpolated, or from its
//! fitted model (tuner/interpolate.hpp); failing both, by the fallback candidate; how() says which.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/core/error.hpp"
#include "tutti/tuner/interpolate.hpp"
#include "tutti/tuner/knobs.hpp"
#include "tutti/tuner/overrides.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::tuner {

inline constexpr std::size_t collective_kinds = 7;  //!< tutti::collective's values
inline constexpr std::size_t dtype_classes = 2;

//! What one call runs: candidate `candidate` of tuned<A...> with `tuning` (null: the defaults).
struct choice {
  std::uint32_t candidate = 0;
  const overrides* tuning = nullptr;
  const row* from = nullptr;  //!< the table row that chose it; null when no row covers the call
};

//! The algorithms a table may name: tuned<A...>'s, in order, and which collectives each has.
struct candidate_info {
  std::string_view name;
  std::array<bool, collective_kinds> has{};  //!< indexed by tutti::collective
};

//! "row 3 (line 40): " — how every refusal of a row begins.
[[nodiscard]] inline std::string row_where(const table& t, std::size_t index) {
  const row& r = t.rows[index];
  return t.source + ": row " + std::to_string(index + 1) + (r.line ? " (line " + std::to_string(r.line) + ")" : "") + ": ";
}

class selection {
 public:
  //! The choice for a call of `c` on `bytes` bytes of `d` elements. Never allocates.
  [[nodiscard]] const choice& find(collective c, dtype_class d, std::uint64_t bytes) const noexcept {
    const auto& ranges = ranges_[slot(c, d)];
    if (ranges.empty()) return fallback_;
    // The first range whose upper bound is >= bytes; the last one ends at the largest size.
    auto it = std::lower_bound(ranges.begin(), ranges.end(), bytes,
                               [](const range& r, std::uint64_t b) { return r.max_bytes < b; });
    return it == ranges.end() ? ranges.back().chosen : it->chosen;
  }

  //! Where this selection's rows came from, for the communicator's info line and --explain.
  [[nodiscard]] const std::string& how() const noexcept { return how_; }

  //! Adds one row (its algorithm already checked by the caller) for its collective and dtype
  //! class; an unknown tuning value is refused here, the message beginning with `where`.
  void add(const row& r, std::uint32_t candidate, const std::string& where) {
    const overrides* tuning = nullptr;
    if (!r.tuning.empty()) {
      owned_.push_back(std::make_unique<overrides>(make_overrides(r.tuning, where)));
      tuning = owned_.back().get();
    }
    ranges_[slot(r.collective_kind, r.dtypes)].push_back({r.max_bytes, {candidate, tuning, &r}});
  }
  //! Orders each list by upper bound (rows arrive in table order).
  void finish(std::string how) {
    for (auto& list : ranges_)
      std::sort(list.begin(), list.end(), [](const range& a, const range& b) { return a.max_bytes < b.max_bytes; });
    how_ = std::move(how);
  }
  //! Adds a row made here (interpolated or predicted), kept alive by the selection.
  void add_owned(row r, std::uint32_t candidate) {
    made_.push_back(std::make_unique<row>(std::move(r)));
    add(*made_.back(), candidate, "a row made for this layout: ");
  }
  void set_fallback(std::uint32_t candidate) noexcept { fallback_ = {candidate, nullptr, nullptr}; }
  //! Whether calls of `c` on `d` have rows (measured or made); without, they take the fallback.
  [[nodiscard]] bool has_rows(collective c, dtype_class d) const noexcept { return !ranges_[slot(c, d)].empty(); }
  //! A dtype class with no rows takes the other class's: the schedules move the same bytes.
  void share_missing_classes() {
    for (std::size_t c = 0; c < collective_kinds; ++c) {
      auto& f = ranges_[c * dtype_classes];
      auto& i = ranges_[c * dtype_classes + 1];
      if (f.empty()) f = i;
      else if (i.empty()) i = f;
    }
  }

 private:
  struct range {
    std::uint64_t max_bytes;
    choice chosen;
  };
  static constexpr std::size_t slot(collective c, dtype_class d) noexcept {
    return static_cast<std::size_t>(c) * dtype_classes + static_cast<std::size_t>(d);
  }
  std::array<std::vector<range>, collective_kinds * dtype_classes> ranges_;
  std::vector<std::unique_ptr<overrides>> owned_;  //!< the rows' tuning values, pointed at by choices
  std::vector<std::unique_ptr<row>> made_;          //!< rows made for this layout, pointed at by choices
  choice fallback_;
  std::string how_;
};

//! For every collective `s` has no rows for: rows from answer_unmeasured over the candidates that
//! have it, added to `s`. Returns "allreduce: interpolated between 2x2 and 8x2; ..." or "".
inline std::string answer_unmeasured_collectives(const table& t, const layout& here,
                                                 std::span<const candidate_info> candidates, std::uint32_t fallback,
                                                 double cores_per_node, selection& s) {
  std::string how;
  for (std::size_t k = 0; k < collective_kinds; ++k) {
    const auto c = static_cast<collective>(k);
    if (s.has_rows(c, dtype_class::floating)) continue;
    std::vector<std::string_view> names;
    for (const auto& cand : candidates)
      if (cand.has[k]) names.push_back(cand.name);
    if (names.empty()) continue;  // no candidate has it: the call is refused elsewhere
    const contender by_default{std::string(candidates[fallback].name), {}};
    for (const dtype_class d : {dtype_class::floating, dtype_class::integer}) {
      const bool measured = std::any_of(t.samples.begin(), t.samples.end(),
                                        [&](const sample& x) { return x.collective_kind == c && x.dtypes == d; });
      if (!measured && !(d == dtype_class::floating && t.model)) continue;  // the other class's rows serve it
      const auto a = answer_unmeasured(t, c, d, here, by_default, names, cores_per_node);
      if (!a || a->rows.empty()) continue;
      for (const row& r : a->rows) {
        const auto found = std::find_if(candidates.begin(), candidates.end(),
                                        [&](const candidate_info& x) { return x.name == r.algorithm; });
        s.add_owned(r, static_cast<std::uint32_t>(found - candidates.begin()));
      }
      how += (how.empty() ? "" : "; ") + std::string(name_of(c)) + " (" + std::string(name_of(d)) + "): " + a->how;
    }
  }
  s.share_missing_classes();
  return how;
}

//! Checks the rows of `t` for layout `here` against the candidates and compiles them: every row's
//! algorithm compiled in and having the row's collective, its tuning values known, and per
//! (collective, dtype class) ranges that start at 0, neither overlap nor leave a gap, and end at
//! the largest size. A collective with no row for `here` is answered by answer_unmeasured
//! (interpolated samples, else the fitted model; `fallback` is the default the rule keeps, over
//! the candidates that have the collective); with neither, every call of it runs candidate
//! `fallback` with its defaults. `cores_per_node` (0: unknown) feeds the model's oversubscription
//! term. `t` must outlive the selection (choices point at its rows).
[[nodiscard]] inline selection compile(const table& t, const layout& here, std::span<const candidate_info> candidates,
                                       std::uint32_t fallback, double cores_per_node = 0) {
  selection s;
  s.set_fallback(fallback);
  std::array<std::vector<std::size_t>, collective_kinds * dtype_classes> rows_of;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const row& r = t.rows[i];
    if (!(r.where == here)) continue;
    const auto found = std::find_if(candidates.begin(), candidates.end(),
                                    [&](const candidate_info& c) { return c.name == r.algorithm; });
    if (found == candidates.end()) {
      std::string names;
      for (const auto& c : candidates) names += (names.empty() ? "" : ", ") + std::string(c.name);
      throw invalid_argument(row_where(t, i) + "algorithm '" + r.algorithm + "' is not compiled into this tuned<" +
                             names + ">");
    }
    if (!found->has[static_cast<std::size_t>(r.collective_kind)])
      throw invalid_argument(row_where(t, i) + "algorithm '" + r.algorithm + "' has no " +
                             std::string(name_of(r.collective_kind)));
    rows_of[static_cast<std::size_t>(r.collective_kind) * dtype_classes + static_cast<std::size_t>(r.dtypes)].push_back(i);
    s.add(r, static_cast<std::uint32_t>(found - candidates.begin()), row_where(t, i));
  }
  for (auto& list : rows_of) {
    std::sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) { return t.rows[a].min_bytes < t.rows[b].min_bytes; });
    std::uint64_t next = 0;
    for (std::size_t k = 0; k < list.size(); ++k) {
      const row& r = t.rows[list[k]];
      if (r.max_bytes < r.min_bytes)
        throw invalid_argument(row_where(t, list[k]) + "max_bytes " + std::to_string(r.max_bytes) + " is below min_bytes " +
                               std::to_string(r.min_bytes));
      if (r.min_bytes > next)
        throw invalid_argument(row_where(t, list[k]) + "starts at " + std::to_string(r.min_bytes) + " bytes, leaving " +
                               std::to_string(next) + ".." + std::to_string(r.min_bytes - 1) + " bytes of " +
                               std::string(name_of(r.collective_kind)) + " (" + std::string(name_of(r.dtypes)) +
                               ") uncovered");
      if (r.min_bytes < next)
        throw invalid_argument(row_where(t, list[k]) + "overlaps " + row_where(t, list[k - 1]) + "both cover " +
                               std::to_string(r.min_bytes) + " bytes");
      if (r.max_bytes == std::numeric_limits<std::uint64_t>::max()) {
        next = r.max_bytes;
        if (k + 1 < list.size())
          throw invalid_argument(row_where(t, list[k + 1]) + "overlaps " + row_where(t, list[k]) +
                                 "which already covers every larger size");
        break;
      }
      next = r.max_bytes + 1;
    }
    if (!list.empty() && next != std::numeric_limits<std::uint64_t>::max()) {
      const row& last = t.rows[list.back()];
      throw invalid_argument(row_where(t, list.back()) + "ends at " + std::to_string(last.max_bytes) +
                             " bytes and no row covers larger " + std::string(name_of(last.collective_kind)) + " (" +
                             std::string(name_of(last.dtypes)) + "); the last row's max_bytes is \"inf\"");
    }
  }
  s.share_missing_classes();
  std::string how;
  for (std::size_t c = 0; c < collective_kinds; ++c)
    if (s.has_rows(static_cast<collective>(c), dtype_class::floating)) {
      how = "measured rows for world " + std::to_string(here.world) + ", " + std::to_string(here.nodes) +
            " node(s) x " + std::to_string(here.ranks_per_node) + " ranks";
      break;
    }
  const auto made = answer_unmeasured_collectives(t, here, candidates, fallback, cores_per_node, s);
  how += (how.empty() || made.empty() ? "" : "; ") + made;
  if (how.empty())
    how = "no rows, samples or model for " + layout_text(here) + ": every call runs " +
          std::string(candidates[fallback].name) + " with its defaults";
  s.finish(std::move(how));
  return s;
}

}  // namespace tutti::tuner
