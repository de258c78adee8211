//! @file arguments.hpp  A collective's arguments, and this rank's own verdict on them (before any peer).
//!
//! CUTLASS's can_implement() apart from run(): everything here reads the collective's row
//! (core/collective_traits.hpp) and the arguments, and gives the reason they are refused (empty
//! when fine), worded in the caller's units. The ranks then compare verdicts (agreement.hpp).
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tutti/codec/concepts.hpp"
#include "tutti/codec/error_feedback.hpp"
#include "tutti/core/collective.hpp"
#include "tutti/core/collective_traits.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/tensor_view.hpp"

namespace tutti::detail {

//! A collective call as its caller wrote it; fields a collective does not take keep their defaults.
struct call_arguments {
  const_tensor_view in{nullptr, 0, dtype::u8};
  tensor_view out{nullptr, 0, dtype::u8};
  op reduction = op::sum;
  int root = -1;
};

//! Which buffers this rank uses: rooted collectives read in (broadcast) or write out (reduce) on
//! root only, and elsewhere out stands in for in, or out is ignored.
struct used_buffers {
  bool in = true, out = true;
  [[nodiscard]] const_tensor_view send(const call_arguments& a) const noexcept {
    return in ? a.in : const_tensor_view(a.out);
  }
  [[nodiscard]] tensor_view recv(const call_arguments& a) const noexcept {
    return out ? a.out : tensor_view(nullptr, 0, a.in.type);
  }
};
template <collective C>
[[nodiscard]] constexpr used_buffers used_by(const call_arguments& a, int rank) noexcept {
  constexpr const collective_traits& row = traits_of(C);
  return {!row.in_on_root_only || a.root == rank, !row.out_on_root_only || a.root == rank};
}

//! The descriptor ranks compare, without its sequence number and codec (the communicator's).
//! Everything here is templated on the collective so that its row folds away: the checked call
//! costs what the seven hand-written bodies did.
template <collective C>
collective_descriptor describe(const call_arguments& a, int world) {
  constexpr const collective_traits& row = traits_of(C);
  collective_descriptor d;
  d.kind = static_cast<std::uint8_t>(C);
  if constexpr (!row.buffers) d.type = static_cast<std::uint8_t>(dtype::u8);
  else d.type = static_cast<std::uint8_t>(row.type_of_out ? a.out.type : a.in.type);
  d.reduction = static_cast<std::uint8_t>(row.reducing ? a.reduction : op::sum);
  if constexpr (row.described == described_count::in) d.count = a.in.count;
  else if constexpr (row.described == described_count::out) d.count = a.out.count;
  else if constexpr (row.described == described_count::in_per_rank) d.count = a.in.count / static_cast<std::size_t>(world);
  else d.count = 0;
  d.root = row.rooted ? a.root : -1;
  return d;
}

//! The codec's name, with its parameter when it has one (topk at 1 % is "topk10"), cut to the
//! descriptor's 8 bytes and NUL-padded: made once, at compile time.
template <class Codec>
constexpr std::array<char, sizeof(collective_descriptor::codec)> codec_tag() {
  std::array<char, sizeof(collective_descriptor::codec)> tag{};
  std::size_t n = 0;
  const auto put = [&](char ch) {
    if (n < tag.size()) tag[n++] = ch;
  };
  for (char ch : std::string_view(Codec::name)) put(ch);
  if constexpr (requires { Codec::parameter; }) {
    const auto p = static_cast<long long>(Codec::parameter);  // as std::to_string writes it
    if (p < 0) put('-');
    char digits[24]{};
    std::size_t k = 0;
    auto v = p < 0 ? 0ULL - static_cast<unsigned long long>(p) : static_cast<unsigned long long>(p);
    do digits[k++] = static_cast<char>('0' + v % 10); while ((v /= 10) != 0);
    while (k) put(digits[--k]);
  }
  return tag;
}

//! What every collective with buffers checks first: valid dtype and op, matching dtypes, a byte
//! count that fits, no null buffer with elements.
// always_inline: on the hot path these ran inline inside the collective before the split, and a
// call to them out of line measured ~5 % of an 8-byte direct allreduce over shm (perf, 2026-11-26).
[[gnu::always_inline]] inline std::string check_common(const collective_descriptor& d, const_tensor_view in, tensor_view out, int world) {
  const auto t = static_cast<dtype>(d.type);
  if (!is_valid(t)) return "dtype value " + std::to_string(d.type) + " is not a tutti::dtype";
  if (!is_valid(static_cast<op>(d.reduction))) return "op value " + std::to_string(d.reduction) + " is not a tutti::op";
  if (in.type != out.type)
    return "send dtype " + std::string(name_of(in.type)) + " differs from recv dtype " + std::string(name_of(out.type));
  const std::size_t limit = SIZE_MAX / size_of(t) / static_cast<std::size_t>(world);
  if (in.count > limit || out.count > limit)
    return "count " + std::to_string(std::max(in.count, out.count)) + " is too large to address in bytes";
  if ((in.count && !in.data) || (out.count && !out.data)) return "null buffer with a non-zero count";
  return {};
}

//! The row's count relation between send and recv: writes the refusal into `bad` when broken.
//! (Out-parameters here, not returned strings: a call with good arguments builds no string.)
template <collective C>
void check_counts(const call_arguments& a, used_buffers used, int world, std::string& bad) {
  constexpr const collective_traits& row = traits_of(C);
  const std::size_t n = static_cast<std::size_t>(world);
  const auto& in = a.in;
  const auto& out = a.out;
  if constexpr (row.counts == count_rule::in_is_out_times_n) {
    if (out.count > SIZE_MAX / n || in.count != out.count * n)
      bad = "send has " + std::to_string(in.count) + " elements but must have world_size (" + std::to_string(n) +
            ") x recv count (" + std::to_string(out.count) + ")";
  } else if constexpr (row.counts == count_rule::out_is_in_times_n) {
    if (in.count > SIZE_MAX / n || out.count != in.count * n)
      bad = "recv has " + std::to_string(out.count) + " elements but must have world_size (" + std::to_string(n) +
            ") x send count (" + std::to_string(in.count) + ")";
  } else if constexpr (row.counts == count_rule::same || row.counts == count_rule::same_blocks_of_n) {
    if (row.counts == count_rule::same_blocks_of_n && in.count % n != 0)
      bad = "send has " + std::to_string(in.count) + " elements, not a multiple of world_size (" + std::to_string(n) +
            ")";
    else if (used.in && used.out && in.count != out.count)
      bad = std::string(row.in_on_root_only ? "root's " : "") + "send has " + std::to_string(in.count) +
            " elements but " + (row.out_on_root_only ? "root's " : "") + "recv has " + std::to_string(out.count);
  }
}

//! dtype, op, buffers, root and counts: all but the codec's and the aliasing rule (checked after).
template <collective C>
[[gnu::always_inline]] inline std::string check_shape(const collective_descriptor& d, const call_arguments& a, int rank, int world) {
  constexpr const collective_traits& row = traits_of(C);
  std::string bad;
  if constexpr (row.buffers) {
    const auto used = used_by<C>(a, rank);
    bad = check_common(d, used.send(a), used.recv(a), world);
    if constexpr (row.rooted) {
      if (bad.empty() && (a.root < 0 || a.root >= world))
        bad = "root " + std::to_string(a.root) + " is outside [0, " + std::to_string(world) + ")";
    }
    if (bad.empty()) check_counts<C>(a, used, world, bad);
  }
  return bad;
}

inline bool overlaps(const void* a, std::size_t an, const void* b, std::size_t bn) noexcept {
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return an && bn && pa < pb + bn && pb < pa + an;
}

//! Out-of-place buffers must not overlap; the row's one in-place layout is allowed. Writes the
//! refusal into `bad` when they do.
template <collective C>
void check_aliasing(const call_arguments& a, int rank, std::string& bad) {
  constexpr const collective_traits& row = traits_of(C);
  if constexpr (row.buffers) {
    const auto used = used_by<C>(a, rank);
    if (!used.in || !used.out) return;
    const auto& in = a.in;
    const auto& out = a.out;
    const auto r = static_cast<std::size_t>(rank);
    bool sanctioned = true;
    if constexpr (row.in_place == in_place_rule::same_buffer) sanctioned = in.data == out.data;
    else if constexpr (row.in_place == in_place_rule::out_is_rank_block) sanctioned = out.data == in.bytes_ptr() + r * out.bytes();
    else if constexpr (row.in_place == in_place_rule::in_is_rank_block) sanctioned = in.data == out.bytes_ptr() + r * in.bytes();
    if (!sanctioned && overlaps(in.data, in.bytes(), out.data, out.bytes()))
      bad = "send and recv buffers overlap without being the in-place layout";
  }
}

//! allreduce_async's own checks before anything is queued: an empty text when they pass (this
//! rank only: the engine's negotiation compares ranks).
template <class Codec>
std::string check_async(const std::string& name, const_tensor_view in, tensor_view out, op o, int rank, int world) {
  const auto shape = [&]() -> std::string {
    if (name.empty()) return "the tensor name is empty";
    if (!is_valid(in.type)) return "dtype value " + std::to_string(static_cast<int>(in.type)) + " is not a tutti::dtype";
    if (!is_valid(o)) return "op value " + std::to_string(static_cast<int>(o)) + " is not a tutti::op";
    if (in.type != out.type)
      return "send dtype " + std::string(name_of(in.type)) + " differs from recv dtype " + std::string(name_of(out.type));
    if (in.count != out.count)
      return "send has " + std::to_string(in.count) + " elements but recv has " + std::to_string(out.count);
    if ((in.count && !in.data) || (out.count && !out.data)) return "null buffer with a non-zero count";
    if (in.count > SIZE_MAX / size_of(in.type) / static_cast<std::size_t>(world))
      return "count " + std::to_string(in.count) + " is too large to address in bytes";
    return {};
  };
  std::string bad = shape();
  if constexpr (!Codec::lossless) {
    if (bad.empty()) bad = lossy_refusal<Codec>(in.type, o);
  }
  if (bad.empty()) check_aliasing<collective::allreduce>({in, out, o}, rank, bad);
  return bad;
}

//! The residual `feedback` keeps for a tensor of `count` elements (made on first use); null, with
//! `bad` saying why, when it holds another tensor's (one error_feedback per tensor).
inline float* residual_of(error_feedback& feedback, std::size_t count, const std::string& where, std::string& bad) {
  if (!feedback.residual().empty() && feedback.residual().size() != count) {
    bad = "this error_feedback holds the residual of " + std::to_string(feedback.residual().size()) +
          " elements, but the tensor has " + std::to_string(count) + " (keep one error_feedback per tensor)";
    return nullptr;
  }
  return feedback.residual_for(count, where);
}

}  // namespace tutti::detail
