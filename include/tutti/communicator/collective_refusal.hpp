//! @file collective_refusal.hpp  Whether an Algorithm has a collective, and the refusal that lists who does.
//!
//! The refusal is one sentence computed from the collective's row (core/collective_traits.hpp)
//! and the algorithms listed so far (core/listed.hpp) that have the collective over this
//! communicator's context, so an algorithm added in its own file, tutti's or a user's, appears in
//! it with no edit here. A C++20 static_assert message must be a literal, so the computed sentence
//! travels as a template argument: GCC prints it in the instantiation note
//! ("refuse_collective<tutti::detail::sentence<N>{"tutti::communicator<...>::allgather: ..."}, ...>").
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <string_view>
#include <utility>

#include "tutti/algorithm/concepts.hpp"
#include "tutti/core/collective_traits.hpp"
#include "tutti/core/listed.hpp"
#include "tutti/core/policy.hpp"

namespace tutti::detail {

//! Algorithm A implements collective C over context Ctx (algorithm/concepts.hpp says how).
template <collective C, class A, class Ctx>
concept implements = has_collective<C, A, Ctx>;

//! Calls A's collective C (algorithm/concepts.hpp: run_collective).
template <collective C, class A, class Ctx>
void invoke(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, int root) {
  run_collective<C, A>(c, in, out, count, t, o, root);
}

//! A string as a template argument (structural), so a diagnostic can print a computed sentence.
template <std::size_t N>
struct sentence {
  char text[N]{};
};

struct listed_entry {
  int position = 0;
  unsigned slot = 0;
  std::string_view shown;
};

template <unsigned I, collective C, class Ctx>
constexpr void collect_listed(std::array<listed_entry, listed_algorithm_slots>& out, std::size_t& n) {
  using slot = listed_algorithm<I>;
  if constexpr (requires { typename slot::type; }) {
    if constexpr (implements<C, typename slot::type, Ctx>)
      out[n++] = {slot::position, I, slot::shown_as.empty() ? std::string_view(slot::type::name) : slot::shown_as};
  }
}

//! Compile-time text of bounded length (std::string is not reliably constexpr in GCC 12's library).
struct text_buffer {
  char text[8192]{};
  std::size_t size = 0;
  constexpr text_buffer& operator+=(std::string_view s) {
    for (char ch : s)
      if (size + 1 < sizeof text) text[size++] = ch;
    return *this;
  }
};

//! The refusal: the collective's row, then the listed algorithms having C over Ctx, by position
//! and then listing order.
template <collective C, class Ctx>
constexpr text_buffer refusal_string() {
  std::array<listed_entry, listed_algorithm_slots> found{};
  std::size_t n = 0;
  [&]<unsigned... I>(std::integer_sequence<unsigned, I...>) {
    (collect_listed<I, C, Ctx>(found, n), ...);
  }(std::make_integer_sequence<unsigned, listed_algorithm_slots>{});
  std::sort(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(n), [](const auto& a, const auto& b) {
    return a.position != b.position ? a.position < b.position : a.slot < b.slot;
  });
  text_buffer t;
  t += "tutti::communicator<...>::";
  t += name_of(C);
  t += ": the Algorithm does not implement ";
  t += name_of(C);
  t += ", or its signature differs; expected: ";
  t += traits_of(C).signature;
  t += "; built algorithms that have it: ";
  for (std::size_t i = 0; i < n; ++i) {
    if (i) t += ", ";
    t += found[i].shown;
  }
  if (n == 0) t += "none is listed (core/listed.hpp)";
  return t;
}

template <collective C, class Ctx>
constexpr auto refusal_text() {
  constexpr text_buffer full = refusal_string<C, Ctx>();
  sentence<full.size + 1> s;
  std::copy(full.text, full.text + full.size, s.text);
  return s;
}

//! Fires with the sentence in its own template arguments, and the Algorithm beside it.
template <sentence Text, class Algorithm>
struct refuse_collective {
  static constexpr bool value = dependent_false<Algorithm>;
  static_assert(value,
                "tutti::communicator<...>: the Algorithm does not implement the collective called, or its "
                "signature differs (the notes around this line say which collective, the signature expected and "
                "the built algorithms that have it, and name the Algorithm)");
};

//! Instantiated by every collective call: silent when the Algorithm has it, one refusal when not.
template <collective C, class Algorithm, class Ctx, bool = implements<C, Algorithm, Ctx>>
struct check_implements {
  static constexpr bool value = true;
};
template <collective C, class Algorithm, class Ctx>
struct check_implements<C, Algorithm, Ctx, false> : refuse_collective<refusal_text<C, Ctx>(), Algorithm> {};

}  // namespace tutti::detail
