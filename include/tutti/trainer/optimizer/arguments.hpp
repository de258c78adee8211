//! @file arguments.hpp  The checks every optimiser makes before it touches a value, and how its messages begin.
#pragma once
#include <cmath>
#include <cstddef>
#include <span>
#include <sstream>
#include <string>
#include <string_view>

#include "tutti/core/error.hpp"
#include "tutti/trainer/model.hpp"

namespace tutti::trainer::detail {

//! A value as a message shows it: the shortest form iostream gives (0.9, 1e-08), not to_string's 0.900000.
[[nodiscard]] inline std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

//! "tutti::trainer::sgd::step: ": how every message of an optimiser's call begins.
[[nodiscard]] inline std::string optimizer_where(std::string_view owner, std::string_view call) {
  return "tutti::trainer::" + std::string(owner) + "::" + std::string(call) + ": ";
}

//! The checks every step makes before touching a value: lengths agree, one finite lr ≥ 0 each.
inline void check_step(std::string_view owner, std::span<const parameter> params, std::span<const double> lrs,
                       bool per_parameter) {
  const auto where = optimizer_where(owner, "step");
  if (per_parameter && lrs.size() != params.size())
    throw invalid_argument(where + "got " + std::to_string(lrs.size()) + " learning rates for " +
                           std::to_string(params.size()) + " parameters");
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    if (p.value.size() != p.grad.size())
      throw invalid_argument(where + "parameter '" + p.name + "' has " + std::to_string(p.value.size()) +
                             " values but " + std::to_string(p.grad.size()) + " gradients");
  }
  for (std::size_t i = 0; i < lrs.size(); ++i)
    if (!(lrs[i] >= 0) || !std::isfinite(lrs[i]))
      throw invalid_argument(where + "learning rate " + number(lrs[i]) +
                             (per_parameter ? " of parameter '" + params[i].name + "'" : std::string()) +
                             " is not a finite number >= 0");
}

}  // namespace tutti::trainer::detail
