//! @file composed_name.hpp  The compile-time name of an algorithm made of others: "hierarchical<direct, ring>".
#pragma once
#include <array>
#include <cstddef>
#include <string_view>

namespace tutti::algorithm {

//! An algorithm's name as a string_view object with static storage, so names can be joined at
//! compile time (algorithm_policy asks only that A::name converts to std::string_view).
template <class A>
inline constexpr std::string_view name_of_algorithm = A::name;

//! The characters of several string_views, joined, with static storage: `value` outlives every
//! caller, as a `static constexpr std::string_view name` must.
template <const std::string_view&... Parts>
struct joined_name {
 private:
  static constexpr std::size_t size = (Parts.size() + ... + 0);
  static constexpr std::array<char, size + 1> chars = [] {
    std::array<char, size + 1> out{};
    std::size_t at = 0;
    const auto append = [&](std::string_view part) {
      for (char ch : part) out[at++] = ch;
    };
    (append(Parts), ...);
    return out;
  }();

 public:
  static constexpr std::string_view value{chars.data(), size};
};

//! "outer<first, second>" from the two parts' names (hierarchical<Intra, Inter>).
inline constexpr std::string_view name_open = "<", name_separator = ", ", name_close = ">";
template <const std::string_view& Outer, class First, class Second>
inline constexpr std::string_view composed_name =
    joined_name<Outer, name_open, name_of_algorithm<First>, name_separator, name_of_algorithm<Second>, name_close>::value;

}  // namespace tutti::algorithm
