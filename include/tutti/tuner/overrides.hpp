//! @file overrides.hpp  Where a tuning struct's defaults are read from, and the values one call runs with instead.
//!
//! Every algorithm's thresholds, crossovers and windows live in a tuning struct of its own
//! (tuner/<algorithm>.hpp), whose default member initialisers are the defaults, each beside where
//! it was measured. An algorithm reads them through its context (`c.tuning<tuner::direct_tuning>()`),
//! which returns this call's override when one was set (what algorithm::tuned<...> will do from a
//! measured table) and the defaults otherwise.
#pragma once
#include <memory>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

namespace tutti::tuner {

//! A tuning struct's defaults: its default member initialisers.
template <class Tuning>
inline constexpr Tuning defaults{};

//! Tuning values for some algorithms, by struct type, in place of their defaults. Made once (not
//! per collective) and handed to a context with set_tuning(); a context without one reads the
//! defaults after one test of a null pointer.
class overrides {
 public:
  //! Uses `values` for every algorithm that reads a Tuning (replaces an earlier one).
  template <class Tuning>
  void set(const Tuning& values) {
    auto copy = std::make_shared<const Tuning>(values);
    for (auto& [type, value] : values_)
      if (type == std::type_index(typeid(Tuning))) {
        value = std::move(copy);
        return;
      }
    values_.emplace_back(std::type_index(typeid(Tuning)), std::move(copy));
  }
  //! The Tuning set here, or null (then the defaults apply).
  template <class Tuning>
  [[nodiscard]] const Tuning* find() const noexcept {
    for (const auto& [type, value] : values_)  // a handful at most: a scan beats a hash
      if (type == std::type_index(typeid(Tuning))) return static_cast<const Tuning*>(value.get());
    return nullptr;
  }

 private:
  std::vector<std::pair<std::type_index, std::shared_ptr<const void>>> values_;
};

}  // namespace tutti::tuner
