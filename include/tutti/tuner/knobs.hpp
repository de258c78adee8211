//! @file knobs.hpp  Every run-time tuning value a table may set, and turning a row's values into
//! the tuner::overrides an algorithm's context hands out.
//!
//! A new tuning struct with knobs (tuner/knob.hpp) joins `tunings_with_knobs` below.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tutti/core/error.hpp"
#include "tutti/tuner/direct.hpp"
#include "tutti/tuner/halving_doubling.hpp"
#include "tutti/tuner/overrides.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::tuner {

template <class... Tunings>
struct tuning_list {};
using tunings_with_knobs = tuning_list<direct_tuning, halving_doubling_tuning>;

namespace detail {
//! Whether `name` is "<Tuning::name>.<k.name>".
template <class Tuning>
bool names(std::string_view name, const knob<Tuning>& k) {
  return name.size() == Tuning::name.size() + 1 + k.name.size() && name.starts_with(Tuning::name) &&
         name[Tuning::name.size()] == '.' && name.substr(Tuning::name.size() + 1) == k.name;
}
template <class Tuning>
bool apply_knobs(overrides& into, std::span<const tuning_value> values) {
  Tuning made = defaults<Tuning>;
  bool any = false;
  for (const auto& v : values)
    for (const auto& k : Tuning::knobs)
      if (names(v.name, k)) {
        made.*k.field = static_cast<std::size_t>(v.value);
        any = true;
      }
  if (any) into.set(made);
  return any;
}
template <class Tuning>
bool names_knob(std::string_view name) {
  for (const auto& k : Tuning::knobs)
    if (names(name, k)) return true;
  return false;
}
template <class... T>
std::string all_knob_names(tuning_list<T...>) {
  std::string names;
  auto add = [&]<class Tuning>(std::type_identity<Tuning>) {
    for (const auto& k : Tuning::knobs)
      names += (names.empty() ? "" : ", ") + std::string(Tuning::name) + "." + std::string(k.name);
  };
  (add(std::type_identity<T>{}), ...);
  return names;
}
}  // namespace detail

namespace detail {
template <class... T>
bool is_knob_in(std::string_view name, tuning_list<T...>) {
  return (names_knob<T>(name) || ...);
}
template <class... T>
void apply_all(overrides& o, std::span<const tuning_value> values, tuning_list<T...>) {
  (apply_knobs<T>(o, values), ...);
}
}  // namespace detail

//! True when `name` is a knob some tuning struct has ("direct.one_shot_bytes").
[[nodiscard]] inline bool is_knob(std::string_view name) { return detail::is_knob_in(name, tunings_with_knobs{}); }

//! Every knob's name, comma-separated (for "unknown tuning value" messages).
[[nodiscard]] inline std::string knob_names() { return detail::all_knob_names(tunings_with_knobs{}); }

//! The overrides a row's tuning values make: each struct they touch at its defaults, with them set.
//! Throws invalid_argument naming an unknown value (`where` begins the message, e.g. "row 3 (line 40): ").
[[nodiscard]] inline overrides make_overrides(std::span<const tuning_value> values, const std::string& where) {
  for (const auto& v : values)
    if (!is_knob(v.name))
      throw invalid_argument(where + "unknown tuning value '" + v.name + "' (known: " + knob_names() + ")");
  overrides o;
  detail::apply_all(o, values, tunings_with_knobs{});
  return o;
}

}  // namespace tutti::tuner
