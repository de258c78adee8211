//! @file concepts.hpp  What an optimiser is: to lars<Inner> (`optimizer`) and to the trainer (`trainer_optimizer`).
//!
//! Apart from trainer/concepts.hpp (which includes this file) so that an optimiser's header does
//! not pull in the fusion engine's handle that the communicator's concept needs.
#pragma once
#include <concepts>
#include <istream>
#include <ostream>
#include <span>
#include <string_view>

#include "tutti/trainer/model.hpp"

namespace tutti::trainer {

//! An optimizer steps parameters with one learning rate per parameter or one for all, saves and
//! loads its whole state, and has a name (which its saved state carries).
template <class O>
concept optimizer = requires(O& o, const O& c, std::span<const parameter> params, std::span<const double> lrs,
                             double lr, std::ostream& out, std::istream& in) {
  o.step(params, lrs);
  o.step(params, lr);
  c.save(out);
  o.load(in);
  { O::name } -> std::convertible_to<std::string_view>;
};

//! The trainer's Optimizer: one step with one learning rate for all parameters, and its whole
//! state saved and loaded for checkpoints. sgd, adam, lars<...> and any_optimizer are ones.
template <class O>
concept trainer_optimizer = requires(O& o, std::span<const parameter> params, double lr, std::ostream& out,
                                     std::istream& in) {
  o.step(params, lr);
  o.save(out);
  o.load(in);
};

}  // namespace tutti::trainer
