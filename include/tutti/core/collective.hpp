//! @file collective.hpp  What a rank is about to do, as a fixed-size descriptor ranks compare.
//!
//! Before a collective moves any data, every rank's descriptor is seen by every other rank
//! (the communicator exchanges them, or an algorithm carries them in its first synchronisation),
//! and all ranks judge them the same way: against rank 0's, field by field. So all ranks agree on
//! the verdict and print the same message.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "tutti/core/dtype.hpp"
#include "tutti/core/op.hpp"

namespace tutti {

enum class collective : std::uint8_t { allreduce, reduce_scatter, allgather, broadcast, barrier, reduce, alltoall };

[[nodiscard]] constexpr std::string_view name_of(collective c) noexcept {
  switch (c) {
    case collective::allreduce: return "allreduce";
    case collective::reduce_scatter: return "reduce_scatter";
    case collective::allgather: return "allgather";
    case collective::broadcast: return "broadcast";
    case collective::barrier: return "barrier";
    case collective::reduce: return "reduce";
    case collective::alltoall: return "alltoall";
  }
  return "?";
}

//! 32 bytes, trivially copyable: travels as raw bytes between ranks.
struct collective_descriptor {
  std::uint64_t sequence = 0;  //!< how many collectives this rank has started on this communicator
  std::uint64_t count = 0;
  std::int32_t root = -1;
  std::uint8_t kind = 0;
  std::uint8_t type = 0;
  std::uint8_t reduction = 0;
  std::uint8_t arguments_ok = 1;  //!< 0: this rank refused its own arguments
  //! The communicator's codec (its name, NUL-padded): ranks built with different codecs would
  //! decode each other's bytes as garbage, so they get a mismatch before any data moves.
  char codec[8] = {};
};
static_assert(sizeof(collective_descriptor) == 32);

//! The outcome of comparing all ranks' descriptors; empty `message` means they agree.
struct agreement {
  enum kind_t { agree, mismatch, refused } kind = agree;
  std::string message;  //!< without the "rank r: collective #s: " prefix
};

namespace detail {
inline std::string describe_field(const collective_descriptor& d, int field) {
  switch (field) {
    case 0: return std::string(name_of(static_cast<collective>(d.kind))) + " #" + std::to_string(d.sequence);
    case 1: return "dtype=" + std::string(name_of(static_cast<dtype>(d.type)));
    case 2: return "op=" + std::string(name_of(static_cast<op>(d.reduction)));
    case 3: return "count=" + std::to_string(d.count);
    case 4: return "root=" + std::to_string(d.root);
    default: return "codec=" + std::string(d.codec, std::find(d.codec, d.codec + sizeof d.codec, '\0'));
  }
}

//! The first field (in the order collective, dtype, op, count, root, codec) where two descriptors
//! differ, or -1.
inline int first_difference(const collective_descriptor& a, const collective_descriptor& b) {
  if (a.kind != b.kind || a.sequence != b.sequence) return 0;
  if (a.type != b.type) return 1;
  if (a.reduction != b.reduction) return 2;
  if (a.count != b.count) return 3;
  if (a.root != b.root) return 4;
  if (std::memcmp(a.codec, b.codec, sizeof a.codec) != 0) return 5;
  return -1;
}
}  // namespace detail

//! Judges descriptors all[0..n) (all[r] is rank r's) as seen from rank `me`.
[[nodiscard]] inline agreement judge(std::span<const collective_descriptor> all, int me) {
  const auto& ref = all[0];
  for (std::size_t p = 1; p < all.size(); ++p) {
    const int field = detail::first_difference(ref, all[p]);
    if (field >= 0)
      return {agreement::mismatch, "ranks disagree: rank 0 has " + detail::describe_field(ref, field) + ", rank " +
                                       std::to_string(p) + " has " + detail::describe_field(all[p], field)};
  }
  if (!all[static_cast<std::size_t>(me)].arguments_ok) return {};  // this rank reports its own reason
  for (std::size_t p = 0; p < all.size(); ++p)
    if (!all[p].arguments_ok)
      return {agreement::refused,
              "rank " + std::to_string(p) + " refused its arguments (its own error says why); no data was moved"};
  return {};
}

}  // namespace tutti
