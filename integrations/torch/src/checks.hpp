//! @file checks.hpp  What the torch backend refuses, in the calling thread, naming rank and collective:
//! "tutti: rank 1: all_reduce: tensors of dtype ComplexFloat are not supported (...)".
#pragma once
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <cstddef>
#include <ostream>
#include <vector>

#include <tutti/tutti.hpp>

namespace tutti_torch {

//! Where a refusal comes from; prints as "tutti: rank R: COLLECTIVE".
struct site {
  int rank;
  const char* collective;
};
inline std::ostream& operator<<(std::ostream& os, const site& s) {
  return os << "tutti: rank " << s.rank << ": " << s.collective;
}

//! torch's dtype as tutti's; refused with a sentence for the ones tutti does not reduce.
inline tutti::dtype dtype_of(const at::Tensor& t, const site& at) {
  switch (t.scalar_type()) {
    case at::kFloat: return tutti::dtype::f32;
    case at::kDouble: return tutti::dtype::f64;
    case at::kHalf: return tutti::dtype::f16;
    case at::kBFloat16: return tutti::dtype::bf16;
    case at::kInt: return tutti::dtype::i32;
    case at::kLong: return tutti::dtype::i64;
    case at::kByte: return tutti::dtype::u8;
    case at::kChar: return tutti::dtype::i8;
    case at::kShort: return tutti::dtype::i16;
    default:
      TORCH_CHECK(false, at, ": tensors of dtype ", t.scalar_type(),
                  " are not supported (float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8 are)");
  }
}

inline tutti::op op_of(const c10d::ReduceOp& o, const site& at) {
  switch (static_cast<c10d::ReduceOp::RedOpType>(o)) {
    case c10d::ReduceOp::SUM: return tutti::op::sum;
    case c10d::ReduceOp::AVG: return tutti::op::avg;
    case c10d::ReduceOp::PRODUCT: return tutti::op::prod;
    case c10d::ReduceOp::MIN: return tutti::op::min;
    case c10d::ReduceOp::MAX: return tutti::op::max;
    default: TORCH_CHECK(false, at, ": this reduce op is not supported (SUM, AVG, PRODUCT, MIN, MAX are)");
  }
}

//! One CPU tensor, contiguous, as tutti's view of its bytes; anything else refused naming why.
inline tutti::tensor_view view_of(const at::Tensor& t, const site& at) {
  TORCH_CHECK(t.device().is_cpu(), at, ": only CPU tensors are supported (got one on ", t.device(), ")");
  TORCH_CHECK(t.is_contiguous(), at, ": the tensor must be contiguous (call .contiguous() first)");
  return {static_cast<std::byte*>(t.data_ptr()), static_cast<std::size_t>(t.numel()), dtype_of(t, at)};
}

inline const at::Tensor& only_tensor(const std::vector<at::Tensor>& ts, const site& at) {
  TORCH_CHECK(ts.size() == 1, at, ": one tensor per process (got ", ts.size(), ")");
  return ts.front();
}

}  // namespace tutti_torch
