//! @file wire.hpp  One serialiser for tutti's byte formats: a fixed byte order, length prefixes, every read bounds-checked.
//!
//! Three formats are written and read with it: tcp_store's frames (big-endian, as its tests and
//! fuzz target pin them), the fusion engine's negotiation messages (little-endian) and the
//! checkpoint file's header (little-endian, on disk). The byte order belongs to the format, so it is
//! a template argument named once where each format is defined, never the host's order: a format
//! reads the same on every machine. Where the order is the host's (little-endian on every machine
//! tutti runs on), a field is one memcpy.
//!
//! writer appends; reader walks a span and checks every read against what is left. A short input,
//! a declared length over the caller's limit or beyond the input, or bytes left over where a
//! message should end throw wire::malformed: a tutti::error naming the format, the field being
//! read and its offset, with those facts as members so a format can word its own refusal (the
//! checkpoint reader keeps its documented sentences). A length is checked before anything is
//! allocated for it, so a hostile length costs nothing.
#pragma once
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tutti/core/error.hpp"

namespace tutti::wire {

static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
              "tutti::wire supports little- and big-endian hosts only");

//! The element types a byte buffer may have (std::byte, unsigned char, char).
template <class B>
concept byte_like = std::same_as<B, std::byte> || std::same_as<B, unsigned char> || std::same_as<B, char>;

//! What a fixed-width field may hold: integers and IEEE floats (bool: write a u8, so its byte is explicit).
template <class T>
concept scalar = (std::integral<T> && !std::same_as<T, bool>) || (std::floating_point<T> && sizeof(T) <= 8);

//! No limit beyond the input itself (a declared length past the end is still refused).
inline constexpr std::uint64_t unbounded = std::numeric_limits<std::uint64_t>::max();

namespace detail {
template <std::size_t N> struct uint_of;
template <> struct uint_of<1> { using type = std::uint8_t; };
template <> struct uint_of<2> { using type = std::uint16_t; };
template <> struct uint_of<4> { using type = std::uint32_t; };
template <> struct uint_of<8> { using type = std::uint64_t; };

template <class U>
[[nodiscard]] constexpr U byteswap(U v) noexcept {
  if constexpr (sizeof(U) == 1) return v;
  else if constexpr (sizeof(U) == 2) return __builtin_bswap16(v);
  else if constexpr (sizeof(U) == 4) return __builtin_bswap32(v);
  else return __builtin_bswap64(v);
}
}  // namespace detail

//! Writes `v` at `p` (sizeof(T) bytes) in byte order `Order`; the caller has checked the room.
template <std::endian Order, scalar T, byte_like B>
void store(B* p, T v) noexcept {
  using U = typename detail::uint_of<sizeof(T)>::type;
  U u = std::bit_cast<U>(v);
  if constexpr (Order != std::endian::native) u = detail::byteswap(u);
  std::memcpy(p, &u, sizeof u);
}

//! Reads a T stored in byte order `Order` at `p`; the caller has checked that sizeof(T) bytes are there.
template <std::endian Order, scalar T, byte_like B>
[[nodiscard]] T load(const B* p) noexcept {
  using U = typename detail::uint_of<sizeof(T)>::type;
  U u;
  std::memcpy(&u, p, sizeof u);
  if constexpr (Order != std::endian::native) u = detail::byteswap(u);
  return std::bit_cast<T>(u);
}

//! Input that is not a whole, well-formed message of its format.
class malformed : public error {
 public:
  enum class reason {
    short_input,  //!< the input ends inside the field
    over_limit,   //!< a declared length or count is over the caller's limit or cannot fit the input
    trailing,     //!< bytes are left where the message should end
  };
  malformed(reason why, std::string field, std::size_t offset, std::uint64_t wanted, std::size_t left,
            const std::string& message)
      : error(message), why_(why), field_(std::move(field)), offset_(offset), wanted_(wanted), left_(left) {}
  [[nodiscard]] reason why() const noexcept { return why_; }
  [[nodiscard]] const std::string& field() const noexcept { return field_; }  //!< what was being read
  [[nodiscard]] std::size_t offset() const noexcept { return offset_; }      //!< where the field begins
  //! Bytes the field needs (short_input), the length or count declared (over_limit), bytes left over (trailing).
  [[nodiscard]] std::uint64_t wanted() const noexcept { return wanted_; }
  [[nodiscard]] std::size_t left() const noexcept { return left_; }  //!< bytes of input from offset() on

 private:
  reason why_;
  std::string field_;
  std::size_t offset_;
  std::uint64_t wanted_;
  std::size_t left_;
};

//! Appends fields in byte order `Order` to a buffer of `Byte`s it owns.
template <std::endian Order, byte_like Byte = std::byte>
class writer {
 public:
  writer() = default;
  explicit writer(std::size_t reserve) { bytes_.reserve(reserve); }

  template <scalar T>
  writer& put(T v) {
    Byte b[sizeof(T)];
    store<Order>(b, v);
    bytes_.insert(bytes_.end(), b, b + sizeof(T));
    return *this;
  }
  //! Bytes as they are, no length (the reader must know how many: a fixed size, or "to the end").
  template <byte_like B>
  writer& raw(std::span<const B> b) {
    const auto* p = reinterpret_cast<const Byte*>(b.data());
    bytes_.insert(bytes_.end(), p, p + b.size());
    return *this;
  }
  writer& raw(std::string_view s) { return raw(std::span<const char>(s.data(), s.size())); }
  //! A `Length` (u32 unless said) holding the byte count, then the bytes.
  template <std::unsigned_integral Length = std::uint32_t, byte_like B>
  writer& prefixed(std::span<const B> b) {
    if (b.size() > std::numeric_limits<Length>::max())
      throw invalid_argument("wire::writer::prefixed: " + std::to_string(b.size()) + " bytes do not fit a " +
                             std::to_string(8 * sizeof(Length)) + "-bit length");
    put(static_cast<Length>(b.size()));
    return raw(b);
  }
  template <std::unsigned_integral Length = std::uint32_t>
  writer& prefixed(std::string_view s) {
    return prefixed<Length>(std::span<const char>(s.data(), s.size()));
  }
  //! Overwrites the field at `offset` (a length known only once what follows it is written).
  template <scalar T>
  void patch(std::size_t offset, T v) {
    if (offset > bytes_.size() || bytes_.size() - offset < sizeof(T))
      throw invalid_argument("wire::writer::patch: offset " + std::to_string(offset) + " is past the end of " +
                             std::to_string(bytes_.size()) + " bytes");
    store<Order>(bytes_.data() + offset, v);
  }

  [[nodiscard]] std::size_t size() const noexcept { return bytes_.size(); }
  [[nodiscard]] std::span<const Byte> view() const noexcept { return bytes_; }
  //! Empties the writer so it can be reused (the buffer's capacity stays).
  void clear() noexcept { bytes_.clear(); }
  [[nodiscard]] std::vector<Byte> take() && { return std::move(bytes_); }

 private:
  std::vector<Byte> bytes_;
};

//! Reads fields in byte order `Order` from a span it does not own; every read is checked.
template <std::endian Order, byte_like Byte = std::byte>
class reader {
 public:
  //! `format` names the input in refusals ("fusion negotiation report", "tcp_store request").
  reader(std::span<const Byte> in, std::string_view format) noexcept : in_(in), format_(format) {}

  template <scalar T>
  [[nodiscard]] T get(std::string_view what) {
    need(sizeof(T), what, "");
    const T v = load<Order, T>(in_.data() + at_);
    at_ += sizeof(T);
    return v;
  }
  //! Exactly `n` bytes (a fixed-size field, or a length read earlier).
  [[nodiscard]] std::span<const Byte> bytes(std::uint64_t n, std::string_view what) {
    need(n, what, "");
    auto out = in_.subspan(at_, static_cast<std::size_t>(n));
    at_ += out.size();
    return out;
  }
  //! A `Length` then that many bytes, at most `limit` of them.
  template <std::unsigned_integral Length = std::uint32_t>
  [[nodiscard]] std::span<const Byte> prefixed(std::string_view what, std::uint64_t limit) {
    const std::size_t start = at_;
    need(sizeof(Length), what, "the length of ");
    const std::uint64_t n = load<Order, Length>(in_.data() + at_);
    at_ += sizeof(Length);
    if (n > limit) {
      at_ = start;
      refuse(malformed::reason::over_limit, what, start, n,
             std::string(what) + " at offset " + std::to_string(start) + " declares " + std::to_string(n) +
                 " bytes, over the limit of " + std::to_string(limit) + " (malformed)");
    }
    return bytes(n, what);
  }
  template <std::unsigned_integral Length = std::uint32_t>
  [[nodiscard]] std::string string(std::string_view what, std::uint64_t limit) {
    const auto b = prefixed<Length>(what, limit);
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  //! A u32 count of entries that each take at least `min_bytes` (>= 1) of the input: a count over
  //! `limit`, or one whose entries cannot fit what is left, is refused before anything is allocated.
  [[nodiscard]] std::uint32_t count(std::string_view what, std::uint64_t limit, std::size_t min_bytes) {
    const std::size_t start = at_;
    const auto n = get<std::uint32_t>(what);
    if (n > limit || n > left() / (min_bytes ? min_bytes : 1)) {
      at_ = start;
      refuse(malformed::reason::over_limit, what, start, n,
             std::string(what) + " at offset " + std::to_string(start) + " declares " + std::to_string(n) +
                 (n > limit ? ", over the limit of " + std::to_string(limit)
                            : " entries of at least " + std::to_string(min_bytes) + " byte(s), but " +
                                  std::to_string(in_.size() - start - 4) + " bytes follow") +
                 " (malformed)");
    }
    return n;
  }
  //! Everything left (a last field that runs to the end).
  [[nodiscard]] std::span<const Byte> rest() noexcept {
    auto out = in_.subspan(at_);
    at_ = in_.size();
    return out;
  }
  //! Refuses bytes left after `what`, the whole message.
  void expect_end(std::string_view what) {
    if (at_ == in_.size()) return;
    refuse(malformed::reason::trailing, what, at_, left(),
           std::to_string(left()) + " trailing byte(s) after " + std::string(what) + " at offset " +
               std::to_string(at_) + " (malformed)");
  }

  [[nodiscard]] std::size_t offset() const noexcept { return at_; }
  [[nodiscard]] std::size_t left() const noexcept { return in_.size() - at_; }
  [[nodiscard]] bool at_end() const noexcept { return at_ == in_.size(); }

 private:
  void need(std::uint64_t n, std::string_view what, std::string_view part) const {
    if (n <= left()) return;
    refuse(malformed::reason::short_input, std::string(part) + std::string(what), at_, n,
           std::string(part) + std::string(what) + " at offset " + std::to_string(at_) + " needs " + std::to_string(n) +
               " byte(s), " + std::to_string(left()) + " left (truncated or malformed)");
  }
  [[noreturn]] void refuse(malformed::reason why, std::string_view field, std::size_t offset, std::uint64_t wanted,
                           const std::string& text) const {
    throw malformed(why, std::string(field), offset, wanted, in_.size() - offset, std::string(format_) + ": " + text);
  }

  std::span<const Byte> in_;
  std::string_view format_;
  std::size_t at_ = 0;
};

}  // namespace tutti::wire
