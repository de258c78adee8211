//! @file explain.hpp  Why a table runs what it runs at one size: `tutti-tune --explain SIZE`.
//!
//! Prints the row that covers the call (its line, range and choice), the row's reason, every
//! candidate's measurement at the measured size nearest to the call's (in log space, as the
//! boundaries are), and the rule (tuner/choose.hpp). A layout the table has no rows for is
//! explained with the rows tuned<A...> would make for it (tuner/interpolate.hpp), saying so.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/tuner/choose.hpp"
#include "tutti/tuner/interpolate.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::tuner {

namespace explain_detail {

[[nodiscard]] inline const row* covering(const std::vector<row>& rows, collective c, dtype_class d, const layout& here,
                                         std::uint64_t bytes) {
  for (const dtype_class k : {d, d == dtype_class::floating ? dtype_class::integer : dtype_class::floating})
    for (const row& r : rows)
      if (r.collective_kind == c && r.dtypes == k && r.where == here && r.min_bytes <= bytes && bytes <= r.max_bytes)
        return &r;
  return nullptr;
}

//! The measurements of (c, d, here) at the measured size nearest to `bytes` in log space.
[[nodiscard]] inline std::vector<const sample*> nearest(const std::vector<sample>& samples, collective c, dtype_class d,
                                                        const layout& here, std::uint64_t bytes) {
  const auto distance = [&](std::uint64_t s) {
    return std::abs(std::log(static_cast<double>(std::max<std::uint64_t>(s, 1))) -
                    std::log(static_cast<double>(std::max<std::uint64_t>(bytes, 1))));
  };
  std::optional<std::uint64_t> best;
  for (const sample& s : samples)
    if (s.collective_kind == c && s.dtypes == d && s.where == here && (!best || distance(s.bytes) < distance(*best)))
      best = s.bytes;
  std::vector<const sample*> at;
  for (const sample& s : samples)
    if (best && s.collective_kind == c && s.dtypes == d && s.where == here && s.bytes == *best) at.push_back(&s);
  std::stable_sort(at.begin(), at.end(),
                   [](const sample* a, const sample* b) { return a->measured.median_us < b->measured.median_us; });
  return at;
}

}  // namespace explain_detail

//! Why `t` runs what it runs for `c` on `bytes` bytes of `d` over `here`, in lines of text.
//! `default_algorithm` is what the rule keeps where no challenger wins beyond the noise when rows
//! must be made for `here` (tuned<A...> uses its fallback candidate); empty: the first algorithm
//! the table's rows for `c` name.
[[nodiscard]] inline std::string explain(const table& t, const layout& here, collective c, dtype_class d,
                                         std::uint64_t bytes, std::string_view default_algorithm = {}) {
  namespace detail = explain_detail;
  std::string out = std::string(name_of(c)) + " of " + bytes_text(bytes) + " (" + std::string(name_of(d)) + ") over " +
                    layout_text(here) + " (world " + std::to_string(here.world) + "), " + t.source + ":\n";
  const std::vector<row>* rows = &t.rows;
  const std::vector<sample>* samples = &t.samples;
  std::optional<answered> made;
  const row* r = detail::covering(t.rows, c, d, here, bytes);
  if (!r) {
    std::string deflt(default_algorithm);
    for (const row& x : t.rows)
      if (deflt.empty() && x.collective_kind == c) deflt = x.algorithm;
    for (const sample& x : t.samples)
      if (deflt.empty() && x.collective_kind == c) deflt = x.measured.algorithm;
    made = answer_unmeasured(t, c, d, here, contender{deflt, {}});
    if (!made) {
      bool other_class = false;
      for (const sample& x : t.samples) other_class = other_class || (x.collective_kind == c && x.dtypes != d);
      if (other_class) made = answer_unmeasured(t, c, d == dtype_class::floating ? dtype_class::integer : dtype_class::floating,
                                                here, contender{deflt, {}});
    }
    if (!made) {
      return out + "  no row covers it, and the table has neither samples around this layout nor a model: "
                   "tuned<A...> runs its fallback candidate with its defaults\n";
    }
    out += "  the table has no rows for this layout; these are " + made->how + " (default " + deflt + ")\n";
    rows = &made->rows;
    samples = &made->samples;
    r = detail::covering(made->rows, c, d, here, bytes);
    if (!r) r = detail::covering(made->rows, c, made->rows.empty() ? d : made->rows.front().dtypes, here, bytes);
    if (!r) return out + "  no row covers it\n";
  }
  const auto index = static_cast<std::size_t>(r - rows->data());
  out += "  row " + std::to_string(index + 1) + (r->line ? " (line " + std::to_string(r->line) + ")" : "") + ": " +
         bytes_text(r->min_bytes) + ".." + bytes_text(r->max_bytes) + " -> " + contender_text(r->algorithm, r->tuning) +
         "\n";
  out += "  why: " + (r->reason.empty() ? std::string("(no reason recorded: a hand-written row)") : r->reason) + "\n";
  const auto at = detail::nearest(*samples, c, r->dtypes, here, bytes);
  if (at.empty()) {
    out += "  no measurements for this layout\n";
  } else {
    out += "  measured at " + bytes_text(at.front()->bytes) + " (the measured size nearest " + bytes_text(bytes) + "):\n";
    for (const sample* s : at) {
      char busbw[48];
      std::snprintf(busbw, sizeof busbw, "  %.3g GB/s", s->measured.busbw_gbs);
      const bool chosen = same(contender{r->algorithm, r->tuning}, s->measured.algorithm, s->measured.tuning);
      out += "    " + contender_text(s->measured.algorithm, s->measured.tuning) + ": " + time_text(s->measured) +
             busbw + (chosen ? "  <- this row's choice" : "") + "\n";
    }
  }
  const std::string rule = t.made.noise_rule.empty() ? std::string(noise_rule) : t.made.noise_rule;
  return out + "  the rule: " + rule + "\n";
}

}  // namespace tutti::tuner
