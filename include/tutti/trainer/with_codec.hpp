//! @file with_codec.hpp  From the configuration's codec name to the communicator's Codec type,
//! among the codecs a program chose to compile (docs/trainer.md, "Which codecs a program compiles").
#pragma once
#include <string>
#include <string_view>

#include "tutti/codec/concepts.hpp"
#include "tutti/codec/float16.hpp"
#include "tutti/codec/int8.hpp"
#include "tutti/codec/none.hpp"
#include "tutti/codec/onebit.hpp"
#include "tutti/codec/topk.hpp"
#include "tutti/core/error.hpp"

namespace tutti::trainer {

//! The codecs a program compiles in for `optimizations.gradient_compression`, in the order
//! with_codec tries them: `codec_list<codec::none, codec::fp16>`. Each one listed instantiates the
//! program's body again (a communicator, its fusion engine and the trainer per codec), so a
//! program that lists only what its configurations use builds in a fraction of the time.
template <class... Codecs>
struct codec_list {
  static_assert(sizeof...(Codecs) > 0,
                "tutti::trainer::with_codec<codec_list<Codecs...>>(name, f) requires at least one codec");
  static_assert((codec_policy<Codecs> && ...),
                "tutti::trainer::codec_list<Codecs...> requires every Codec to satisfy tutti::codec_policy");
};

//! Every codec a configuration can name: with_codec's default, for programs that offer them all.
using all_codecs = codec_list<codec::none, codec::fp16, codec::bf16, codec::int8, codec::topk, codec::onebit>;

namespace with_codec_detail {

template <class... Codecs>
std::string names(codec_list<Codecs...>) {
  std::string s;
  ((s += (s.empty() ? "" : ", ") + std::string(Codecs::name)), ...);
  return s;
}

template <class... Codecs>
bool has(codec_list<Codecs...>, std::string_view name) {
  return ((name == Codecs::name) || ...);
}

template <class Codec, class... Rest, class F>
decltype(auto) dispatch(std::string_view name, F& f, const std::string& listed) {
  if (name == Codec::name) return f.template operator()<Codec>();
  if constexpr (sizeof...(Rest) == 0) {
    if (!has(all_codecs{}, name))
      throw invalid_argument("optimizations.gradient_compression: '" + std::string(name) + "' is not a codec (" +
                             names(all_codecs{}) + ")");
    throw invalid_argument("optimizations.gradient_compression: '" + std::string(name) +
                           "' is not one of the codecs this program was built with (" + listed +
                           "): add tutti::codec::" + std::string(name) +
                           " to the codec_list it passes to tutti::trainer::with_codec, or pass "
                           "tutti::trainer::all_codecs");
  } else {
    return dispatch<Rest...>(name, f, listed);
  }
}

template <class T>
inline constexpr bool is_codec_list = false;
template <class... Codecs>
inline constexpr bool is_codec_list<codec_list<Codecs...>> = true;

template <class... Codecs, class F>
decltype(auto) with_codec(codec_list<Codecs...> list, std::string_view name, F& f) {
  return dispatch<Codecs...>(name, f, names(list));
}

}  // namespace with_codec_detail

//! Calls `f.template operator()<Codec>()` with the codec `name` selects (gradient_compression),
//! among `Codecs` (default: all_codecs). A name `Codecs` lacks is a tutti::invalid_argument that
//! names it and the codecs the program has, thrown before any communicator exists.
template <class Codecs = all_codecs, class F>
decltype(auto) with_codec(std::string_view name, F&& f) {
  static_assert(with_codec_detail::is_codec_list<Codecs>,
                "tutti::trainer::with_codec<Codecs>(name, f) requires Codecs to be a "
                "tutti::trainer::codec_list<...> of codecs");
  return with_codec_detail::with_codec(Codecs{}, name, f);
}

}  // namespace tutti::trainer
