//! @file interpolate.hpp  Rows for a layout that was never measured: interpolated in log space
//! between measured layouts, or beyond them priced by the fitted cost model.
//!
//! Between two measured layouts that differ in one number (nodes at the same ranks per node, or
//! ranks per node on the same nodes), every candidate measured at the same size in both gets, for
//! the layout in between, log t = (1-w) log t1 + w log t2 with w = (log x - log x1)/(log x2 - log x1)
//! (median, spread and busbw alike): times of collectives grow like powers of the rank count
//! (log p steps, p-1 steps), which are straight lines in log-log. Then tuner/choose.hpp's rule
//! makes the rows from those samples, with the reason saying "interpolated between 2x2 and 8x2".
//! (A layout with samples but no rows has its rows chosen from its own samples.) Beyond the
//! measured layouts (or with no samples), the table's fitted model predicts each
//! candidate at the measured sizes (tuner/predict.hpp), with the model's rms relative error as
//! the spread: a challenger must beat the default by more than the model's own typical error.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/tuner/choose.hpp"
#include "tutti/tuner/predict.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::tuner {

//! "8x2": nodes x ranks per node ("world 6 on 4 nodes" when uneven).
[[nodiscard]] inline std::string layout_text(const layout& l) {
  if (l.ranks_per_node == 0) return "world " + std::to_string(l.world) + " on " + std::to_string(l.nodes) + " nodes";
  return std::to_string(l.nodes) + "x" + std::to_string(l.ranks_per_node);
}

//! Rows made for a layout that has none, and how they were made (a selection's how()).
struct answered {
  std::vector<row> rows;
  std::vector<sample> samples;  //!< what they were chosen from (interpolated or predicted)
  std::string how;
};

namespace interpolate_detail {

//! Two measured layouts on either side of `here` along one axis, nearest first.
struct bracket {
  layout low, high;
  double w = 0;  //!< here's position between them in log space
};

//! log-space interpolation of one value; a zero or negative end point (a spread of 0) falls back to
//! a straight line, which log space cannot hold.
[[nodiscard]] inline double between(double a, double b, double w) {
  if (a > 0 && b > 0) return std::exp((1 - w) * std::log(a) + w * std::log(b));
  return (1 - w) * a + w * b;
}

[[nodiscard]] inline std::optional<bracket> find_bracket(const std::vector<layout>& measured, const layout& here) {
  if (here.ranks_per_node == 0) return std::nullopt;  // uneven nodes have no axis to lie on
  const auto along = [&](auto same_other, auto axis) -> std::optional<bracket> {
    const layout* low = nullptr;
    const layout* high = nullptr;
    for (const layout& l : measured) {
      if (!same_other(l) || l.ranks_per_node == 0) continue;
      if (axis(l) < axis(here) && (!low || axis(l) > axis(*low))) low = &l;
      if (axis(l) > axis(here) && (!high || axis(l) < axis(*high))) high = &l;
    }
    if (!low || !high) return std::nullopt;
    const double x = axis(here), x1 = axis(*low), x2 = axis(*high);
    return bracket{*low, *high, (std::log(x) - std::log(x1)) / (std::log(x2) - std::log(x1))};
  };
  if (auto b = along([&](const layout& l) { return l.ranks_per_node == here.ranks_per_node; },
                     [](const layout& l) { return static_cast<double>(l.nodes); }))
    return b;
  return along([&](const layout& l) { return l.nodes == here.nodes; },
               [](const layout& l) { return static_cast<double>(l.ranks_per_node); });
}

[[nodiscard]] inline bool allowed_name(std::span<const std::string_view> allowed, std::string_view name) {
  return allowed.empty() || std::find(allowed.begin(), allowed.end(), name) != allowed.end();
}

[[nodiscard]] inline bool is_key(const sample& s, collective c, dtype_class d) {
  return s.collective_kind == c && s.dtypes == d;
}

//! Appends `text` to every row's reason and returns the rows.
[[nodiscard]] inline std::vector<row> noted(std::vector<row> rows, const std::string& text) {
  for (row& r : rows) r.reason += text;
  return rows;
}

}  // namespace interpolate_detail

//! The samples of (c, d) at `here` made by log-space interpolation between the two nearest measured
//! layouts around it, only for candidates in `allowed` (empty: all) measured at the same size in
//! both. Nothing (nullopt) when no two measured layouts bracket `here`, or `here` was measured.
[[nodiscard]] inline std::optional<answered> interpolated_samples(std::span<const sample> samples, collective c,
                                                                  dtype_class d, const layout& here,
                                                                  std::span<const std::string_view> allowed = {}) {
  namespace detail = interpolate_detail;
  std::vector<layout> measured;
  for (const sample& s : samples)
    if (detail::is_key(s, c, d) && std::find(measured.begin(), measured.end(), s.where) == measured.end())
      measured.push_back(s.where);
  if (std::find(measured.begin(), measured.end(), here) != measured.end()) return std::nullopt;
  const auto b = detail::find_bracket(measured, here);
  if (!b) return std::nullopt;
  answered a;
  for (const sample& lo : samples) {
    if (!detail::is_key(lo, c, d) || !(lo.where == b->low) || !detail::allowed_name(allowed, lo.measured.algorithm))
      continue;
    for (const sample& hi : samples) {
      if (!detail::is_key(hi, c, d) || !(hi.where == b->high) || hi.bytes != lo.bytes ||
          !same(contender{lo.measured.algorithm, lo.measured.tuning}, hi.measured.algorithm, hi.measured.tuning))
        continue;
      sample s = lo;
      s.where = here;
      s.line = 0;
      s.measured.median_us = detail::between(lo.measured.median_us, hi.measured.median_us, b->w);
      s.measured.spread_us = detail::between(lo.measured.spread_us, hi.measured.spread_us, b->w);
      s.measured.busbw_gbs = detail::between(lo.measured.busbw_gbs, hi.measured.busbw_gbs, b->w);
      a.samples.push_back(std::move(s));
      break;
    }
  }
  if (a.samples.empty()) return std::nullopt;
  a.how = "interpolated between " + layout_text(b->low) + " and " + layout_text(b->high);
  return a;
}

//! The samples of (c, d) at `here` as the table's fitted model predicts them: every algorithm in
//! `allowed` (empty: every one the table's samples or rows name) the model has a formula for, at
//! the sizes measured for c (8 B..256 MiB by 4 without samples). Nothing without a model.
[[nodiscard]] inline std::optional<answered> modelled_samples(const table& t, collective c, dtype_class d,
                                                              const layout& here,
                                                              std::span<const std::string_view> allowed = {},
                                                              double cores_per_node = 0) {
  if (!t.model) return std::nullopt;
  std::vector<std::uint64_t> sizes;
  std::vector<std::string_view> names(allowed.begin(), allowed.end());
  for (const sample& s : t.samples) {
    if (s.collective_kind == c && std::find(sizes.begin(), sizes.end(), s.bytes) == sizes.end()) sizes.push_back(s.bytes);
    if (allowed.empty() && std::find(names.begin(), names.end(), s.measured.algorithm) == names.end())
      names.push_back(s.measured.algorithm);
  }
  if (allowed.empty())
    for (const row& r : t.rows)
      if (std::find(names.begin(), names.end(), r.algorithm) == names.end()) names.push_back(r.algorithm);
  // A collective the table never measured is not the model's to answer: the parameters were
  // fitted to the collectives that were (allreduce, as tutti-tune measures by default), and the
  // other collectives' terms fit this VM 28-42 % worse (docs/tuning.md). Those calls run the
  // fallback (what algorithm::automatic would), and the selection says so.
  if (sizes.empty()) return std::nullopt;
  std::sort(sizes.begin(), sizes.end());
  const cost_parameters p = parameters_of(*t.model);
  answered a;
  for (const std::uint64_t bytes : sizes)
    for (const std::string_view name : names)
      if (const auto seconds = predicted_seconds(p, name, c, here, static_cast<double>(bytes), cores_per_node)) {
        sample s;
        s.collective_kind = c;
        s.dtypes = d;
        s.where = here;
        s.bytes = bytes;
        s.measured.algorithm = std::string(name);
        s.measured.median_us = *seconds * 1e6;
        s.measured.spread_us = s.measured.median_us * t.model->rms_relative_error;
        a.samples.push_back(std::move(s));
      }
  if (a.samples.empty()) return std::nullopt;
  a.how = "predicted by the cost model fitted to " + std::to_string(t.model->samples) + " samples";
  return a;
}

//! The samples of (c, d) measured at `here` itself (a table with samples but no rows for it).
[[nodiscard]] inline std::optional<answered> own_samples(std::span<const sample> samples, collective c, dtype_class d,
                                                         const layout& here,
                                                         std::span<const std::string_view> allowed = {}) {
  namespace detail = interpolate_detail;
  answered a;
  for (const sample& s : samples)
    if (detail::is_key(s, c, d) && s.where == here && detail::allowed_name(allowed, s.measured.algorithm))
      a.samples.push_back(s);
  if (a.samples.empty()) return std::nullopt;
  a.how = "chosen from the samples of " + layout_text(here) + " (the table has no rows for it)";
  return a;
}

//! Rows for (c, d) at `here`, which has none in `t`: chosen from its own samples if it has some,
//! else interpolated between measured layouts when two bracket it, else predicted by the table's
//! model, else nothing. `by_default` as in choose().
[[nodiscard]] inline std::optional<answered> answer_unmeasured(const table& t, collective c, dtype_class d,
                                                               const layout& here, const contender& by_default,
                                                               std::span<const std::string_view> allowed = {},
                                                               double cores_per_node = 0) {
  auto a = own_samples(t.samples, c, d, here, allowed);
  if (!a) a = interpolated_samples(t.samples, c, d, here, allowed);
  if (!a) a = modelled_samples(t, c, d, here, allowed, cores_per_node);
  if (!a) return std::nullopt;
  std::vector<contender> order;
  for (const std::string_view name : allowed) order.push_back({std::string(name), {}});
  a->rows = interpolate_detail::noted(choose(a->samples, c, d, here, by_default, order), " (" + a->how + ")");
  return a;
}

}  // namespace tutti::tuner
