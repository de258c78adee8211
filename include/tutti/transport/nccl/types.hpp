//! @file types.hpp  tutti's dtypes and ops as NCCL's, in one constexpr table each.
//!
//! Every tutti dtype but int16 has an NCCL type; every tutti op has an NCCL op with the same
//! meaning, integer avg included: NCCL's ncclAvg on integers sums with wrap-around and divides the
//! magnitude, restoring the sign (FuncSumPostDiv::divide in NCCL's src/device/reduce_kernel.h),
//! which is tutti's truncation toward zero. Where results can differ in the last bits: NCCL sums
//! half and bfloat16 in 16 bits at each step (tutti's CPU path in fp32), its float avg multiplies
//! by 1/n rather than dividing, and its float min/max are fminf/fmaxf (a NaN loses to a number).
//! Collectives that reduce nothing (allgather, broadcast, alltoall) move bytes and take any dtype.
#pragma once
#include <nccl.h>

#include <array>
#include <optional>
#include <string>
#include <utility>

#include "tutti/core/dtype.hpp"
#include "tutti/core/op.hpp"

namespace tutti::transport::nccl_detail {

inline constexpr std::array<std::pair<dtype, ncclDataType_t>, 10> type_table = {{
    {dtype::i8, ncclInt8},
    {dtype::u8, ncclUint8},
    {dtype::i32, ncclInt32},
    {dtype::u32, ncclUint32},
    {dtype::i64, ncclInt64},
    {dtype::u64, ncclUint64},
    {dtype::f16, ncclFloat16},
    {dtype::f32, ncclFloat32},
    {dtype::f64, ncclFloat64},
    {dtype::bf16, ncclBfloat16},
}};

inline constexpr std::array<std::pair<op, ncclRedOp_t>, 5> op_table = {{
    {op::sum, ncclSum},
    {op::prod, ncclProd},
    {op::max, ncclMax},
    {op::min, ncclMin},
    {op::avg, ncclAvg},
}};

//! NCCL's type for t, or nullopt (int16).
[[nodiscard]] constexpr std::optional<ncclDataType_t> nccl_type_of(dtype t) noexcept {
  for (const auto& [d, n] : type_table)
    if (d == t) return n;
  return std::nullopt;
}

[[nodiscard]] constexpr std::optional<ncclRedOp_t> nccl_op_of(op o) noexcept {
  for (const auto& [t, n] : op_table)
    if (t == o) return n;
  return std::nullopt;
}

//! Why NCCL cannot reduce t with o, or "" when it can.
[[nodiscard]] inline std::string reduction_refusal(dtype t, op o) {
  if (!nccl_type_of(t))
    return "dtype " + std::string(name_of(t)) + " has no NCCL type, so algorithm::native cannot reduce it "
           "(NCCL reduces int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16)";
  if (!nccl_op_of(o)) return "op " + std::string(name_of(o)) + " has no NCCL reduction";
  return {};
}

}  // namespace tutti::transport::nccl_detail
