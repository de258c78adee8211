//! @file with_codec_test.cpp  trainer::with_codec: the configuration's codec name to a Codec type,
//! among all codecs by default or only those a program lists (issue 18: compiling all six made a
//! trainer program take minutes to build).
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <type_traits>

#include "tutti/core/error.hpp"
#include "tutti/trainer/with_codec.hpp"

namespace {

using tutti::trainer::codec_list;
using tutti::trainer::with_codec;

//! The name of the codec with_codec chose, and that it was called once.
struct chosen {
  int calls = 0;
  template <class Codec>
  std::string_view operator()() {
    ++calls;
    return Codec::name;
  }
};

std::string refusal_of(auto&& call) {
  try {
    call();
  } catch (const tutti::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("with_codec: with no list, every codec a configuration can name") {
  for (const std::string_view name : {"none", "fp16", "bf16", "int8", "topk", "onebit"}) {
    chosen f;
    CHECK(with_codec(name, f) == name);
    CHECK(f.calls == 1);
  }
  CHECK(refusal_of([] { (void)with_codec("zip", chosen{}); }) ==
        "optimizations.gradient_compression: 'zip' is not a codec (none, fp16, bf16, int8, topk, onebit)");
}

TEST_CASE("with_codec: a program's own list, and a clear refusal of a codec it left out") {
  using two = codec_list<tutti::codec::none, tutti::codec::fp16>;
  CHECK(with_codec<two>("none", chosen{}) == "none");
  CHECK(with_codec<two>("fp16", chosen{}) == "fp16");
  CHECK(refusal_of([] { (void)with_codec<two>("int8", chosen{}); }) ==
        "optimizations.gradient_compression: 'int8' is not one of the codecs this program was built with (none, "
        "fp16): add tutti::codec::int8 to the codec_list it passes to tutti::trainer::with_codec, or pass "
        "tutti::trainer::all_codecs");
  CHECK(refusal_of([] { (void)with_codec<two>("zip", chosen{}); }) ==
        "optimizations.gradient_compression: 'zip' is not a codec (none, fp16, bf16, int8, topk, onebit)");

  // One codec, with parameters of its own (named as the configuration names it), and an f that
  // returns nothing.
  int runs = 0;
  with_codec<codec_list<tutti::codec::topk_of<50>>>("topk", [&]<class Codec>() {
    static_assert(std::is_same_v<Codec, tutti::codec::topk_of<50>>);
    ++runs;
  });
  CHECK(runs == 1);
}
