//! @file knob.hpp  One run-time tuning value of a tuning struct, named for tables.
//!
//! A tuning struct (tuner/<algorithm>.hpp) whose values a table may set says so with
//! `static constexpr std::string_view name` and `static constexpr std::array knobs` of these; a
//! table names a knob "<name>.<knob>" (tuner/knobs.hpp reads them). Values that are compile-time
//! constants (windows) are not knobs.
#pragma once
#include <cstddef>
#include <string_view>

namespace tutti::tuner {

template <class Tuning>
struct knob {
  std::string_view name;
  std::size_t Tuning::*field;
};

}  // namespace tutti::tuner
