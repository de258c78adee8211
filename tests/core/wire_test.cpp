//! @file wire_test.cpp  tutti::wire: round trips, byte order pinned by golden bytes, every truncation and absurd length refused.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/core/wire.hpp"

namespace {

namespace wire = tutti::wire;
using le_writer = wire::writer<std::endian::little>;
using be_writer = wire::writer<std::endian::big, unsigned char>;
using le_reader = wire::reader<std::endian::little>;
using be_reader = wire::reader<std::endian::big, unsigned char>;

std::vector<std::byte> bytes_of(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

// One message of every kind of field; write() and read() agree on it, field by field.
template <class Writer>
void write_sample(Writer& w) {
  w.put(std::uint8_t{0x01})
      .put(std::uint16_t{0x0203})
      .put(std::uint32_t{0x04050607})
      .put(std::uint64_t{0x08090a0b0c0d0e0f})
      .put(std::int32_t{-2})
      .put(1.0f)
      .prefixed(std::string_view("ab"))
      .raw(std::string_view("xyz"));
}

// Field names and where each begins, as read_sample reads them (for the truncation test).
struct field_at {
  std::size_t offset;
  const char* name;
};
constexpr field_at sample_fields[] = {
    {0, "a u8"},      {1, "a u16"},         {3, "a u32"},   {7, "a u64"}, {15, "an i32"},
    {19, "a float"},  {23, "the length of a string"}, {27, "a string"}, {29, "three raw bytes"},
};
constexpr std::size_t sample_size = 32;

struct sample {
  std::uint8_t u8;
  std::uint16_t u16;
  std::uint32_t u32;
  std::uint64_t u64;
  std::int32_t i32;
  float f;
  std::string text;
  std::size_t raw;
};

// Reads without checking values (a CHECK would swallow the refusal the truncation test wants).
template <class Reader>
sample read_fields(Reader& in) {
  sample s{};
  s.u8 = in.template get<std::uint8_t>("a u8");
  s.u16 = in.template get<std::uint16_t>("a u16");
  s.u32 = in.template get<std::uint32_t>("a u32");
  s.u64 = in.template get<std::uint64_t>("a u64");
  s.i32 = in.template get<std::int32_t>("an i32");
  s.f = in.template get<float>("a float");
  s.text = in.string("a string", 16);
  s.raw = in.bytes(3, "three raw bytes").size();
  in.expect_end("the sample");
  return s;
}

template <class Reader>
void read_sample(Reader& in) {
  const sample s = read_fields(in);
  CHECK(s.u8 == 0x01);
  CHECK(s.u16 == 0x0203);
  CHECK(s.u32 == 0x04050607u);
  CHECK(s.u64 == 0x08090a0b0c0d0e0full);
  CHECK(s.i32 == -2);
  CHECK(s.f == 1.0f);
  CHECK(s.text == "ab");
  CHECK(s.raw == 3);
}

}  // namespace

TEST_CASE("wire: the byte order is the format's, pinned by golden bytes, not the host's") {
  le_writer le;
  write_sample(le);
  const auto golden_le = bytes_of({0x01, 0x03, 0x02, 0x07, 0x06, 0x05, 0x04, 0x0f, 0x0e, 0x0d, 0x0c, 0x0b,
                                   0x0a, 0x09, 0x08, 0xfe, 0xff, 0xff, 0xff, 0x00, 0x00, 0x80, 0x3f, 0x02,
                                   0x00, 0x00, 0x00, 'a',  'b',  'x',  'y',  'z'});
  CHECK(std::move(le).take() == golden_le);

  be_writer be;
  write_sample(be);
  const std::vector<unsigned char> golden_be = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
                                                0x0c, 0x0d, 0x0e, 0x0f, 0xff, 0xff, 0xff, 0xfe, 0x3f, 0x80, 0x00,
                                                0x00, 0x00, 0x00, 0x00, 0x02, 'a',  'b',  'x',  'y',  'z'};
  CHECK(std::move(be).take() == golden_be);
  CHECK(golden_be.size() == sample_size);

  // load/store are the primitives the writer and reader use (and tcp_store's frame header).
  unsigned char four[4];
  wire::store<std::endian::big>(four, std::uint32_t{0x11223344});
  CHECK(four[0] == 0x11);
  CHECK(four[3] == 0x44);
  CHECK(wire::load<std::endian::little, std::uint32_t>(four) == 0x44332211u);
}

TEST_CASE("wire: every field survives a round trip, in both byte orders") {
  le_writer le;
  write_sample(le);
  const auto lb = std::move(le).take();
  le_reader lin(lb, "sample");
  read_sample(lin);
  CHECK(lin.at_end());

  be_writer be;
  write_sample(be);
  const auto bb = std::move(be).take();
  be_reader bin(bb, "sample");
  read_sample(bin);

  // Extremes, signed values, floats bit for bit (a NaN's payload included), 16- and 64-bit length prefixes.
  le_writer w;
  const double nan = std::bit_cast<double>(std::uint64_t{0x7ff8000000000123});
  const std::string long_text(70000, 'q');
  w.put(std::numeric_limits<std::int64_t>::min())
      .put(std::numeric_limits<std::uint64_t>::max())
      .put(std::int8_t{-128})
      .put(-0.0)
      .put(nan)
      .prefixed<std::uint16_t>(std::string_view(""))
      .prefixed<std::uint64_t>(std::string_view(long_text))
      .prefixed(std::span<const std::byte>(lb));
  const auto b = std::move(w).take();
  le_reader in(b, "extremes");
  CHECK(in.get<std::int64_t>("min") == std::numeric_limits<std::int64_t>::min());
  CHECK(in.get<std::uint64_t>("max") == std::numeric_limits<std::uint64_t>::max());
  CHECK(in.get<std::int8_t>("i8") == -128);
  const double z = in.get<double>("-0");
  CHECK((z == 0.0 && std::signbit(z)));
  CHECK(std::bit_cast<std::uint64_t>(in.get<double>("nan")) == 0x7ff8000000000123ull);
  CHECK(in.string<std::uint16_t>("empty", 0).empty());
  CHECK(in.string<std::uint64_t>("long", wire::unbounded) == long_text);
  const auto nested = in.prefixed("nested", lb.size());
  CHECK(std::vector<std::byte>(nested.begin(), nested.end()) == lb);
  CHECK(in.rest().empty());
  CHECK(in.at_end());
}

TEST_CASE("wire: input cut at any offset is refused, naming the field and its offset") {
  be_writer w;
  write_sample(w);
  const auto whole = std::move(w).take();
  REQUIRE(whole.size() == sample_size);
  for (std::size_t cut = 0; cut < whole.size(); ++cut) {
    CAPTURE(cut);
    be_reader in(std::span<const unsigned char>(whole).first(cut), "sample");
    std::size_t i = 0;
    while (i + 1 < std::size(sample_fields) && sample_fields[i + 1].offset <= cut) ++i;
    const auto& f = sample_fields[i];
    try {
      (void)read_fields(in);
      FAIL("a cut message was read whole");
    } catch (const wire::malformed& e) {
      CHECK(e.why() == wire::malformed::reason::short_input);
      CHECK(e.field() == f.name);
      CHECK(e.offset() == f.offset);
      CHECK(e.left() == cut - f.offset);
      CHECK(std::string(e.what()) == "sample: " + std::string(f.name) + " at offset " + std::to_string(f.offset) +
                                         " needs " + std::to_string(e.wanted()) + " byte(s), " +
                                         std::to_string(cut - f.offset) + " left (truncated or malformed)");
    }
  }
  // The error is a tutti::error, so callers that catch those see it.
  be_reader empty(std::span<const unsigned char>{}, "sample");
  CHECK_THROWS_AS((void)empty.get<std::uint32_t>("a u32"), tutti::error);
}

TEST_CASE("wire: absurd lengths and counts are refused before anything is allocated; trailing bytes too") {
  // A u32 length of 2^32-1 with three bytes behind it: past the input, and over a caller's limit.
  const auto huge = bytes_of({0xff, 0xff, 0xff, 0xff, 'a', 'b', 'c'});
  {
    le_reader in(huge, "msg");
    try {
      (void)in.prefixed("a name", 16);
      FAIL("an over-limit length was accepted");
    } catch (const wire::malformed& e) {
      CHECK(e.why() == wire::malformed::reason::over_limit);
      CHECK(e.wanted() == 0xffffffffull);
      CHECK(e.offset() == 0);
      CHECK(std::string(e.what()) == "msg: a name at offset 0 declares 4294967295 bytes, over the limit of 16 (malformed)");
    }
    CHECK(in.offset() == 0);  // a refused read consumes nothing
  }
  {
    le_reader in(huge, "msg");
    CHECK_THROWS_WITH_AS((void)in.string("a name", wire::unbounded),
                         "msg: a name at offset 4 needs 4294967295 byte(s), 3 left (truncated or malformed)",
                         wire::malformed);
  }
  // Within the limit but longer than what follows.
  {
    const auto five = bytes_of({5, 0, 0, 0, 'a', 'b'});
    le_reader in(five, "msg");
    CHECK_THROWS_AS((void)in.prefixed("a name", 8), wire::malformed);
  }
  // Counts: over the limit, or more entries than the bytes behind them could hold.
  {
    le_reader in(huge, "msg");
    CHECK_THROWS_WITH_AS((void)in.count("the key count", 1000, 4),
                         "msg: the key count at offset 0 declares 4294967295, over the limit of 1000 (malformed)",
                         wire::malformed);
  }
  {
    const auto two = bytes_of({2, 0, 0, 0, 0, 0, 0, 0, 9});
    le_reader in(two, "msg");
    try {
      (void)in.count("the word count", wire::unbounded, 8);
      FAIL("two 8-byte entries in 5 bytes were accepted");
    } catch (const wire::malformed& e) {
      CHECK(e.why() == wire::malformed::reason::over_limit);
      CHECK(std::string(e.what()) ==
            "msg: the word count at offset 0 declares 2 entries of at least 8 byte(s), but 5 bytes follow (malformed)");
    }
    le_reader ok(two, "msg");
    CHECK(ok.count("the word count", wire::unbounded, 2) == 2);
  }
  // Trailing bytes.
  {
    const auto three = bytes_of({1, 2, 3});
    le_reader in(three, "msg");
    (void)in.get<std::uint8_t>("a byte");
    try {
      in.expect_end("the message");
      FAIL("trailing bytes were accepted");
    } catch (const wire::malformed& e) {
      CHECK(e.why() == wire::malformed::reason::trailing);
      CHECK(e.wanted() == 2);
      CHECK(std::string(e.what()) == "msg: 2 trailing byte(s) after the message at offset 1 (malformed)");
    }
  }
  // The writer refuses what its length prefix cannot say rather than write a wrong length.
  le_writer w;
  const std::string k300(300, 'k');
  CHECK_THROWS_AS(w.prefixed<std::uint8_t>(std::string_view(k300)), tutti::invalid_argument);
  CHECK(w.size() == 0);
  w.put(std::uint32_t{0}).put(std::uint8_t{7});
  w.patch(0, std::uint32_t{0x01020304});
  CHECK(std::move(w).take() == bytes_of({4, 3, 2, 1, 7}));
  le_writer small;
  small.put(std::uint16_t{1});
  CHECK_THROWS_AS(small.patch(1, std::uint32_t{0}), tutti::invalid_argument);
}
