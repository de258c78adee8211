//! @file unequal_alltoall.hpp  all_to_all_single with unequal splits, over tutti's equal alltoall.
//!
//! tutti's communicator has an alltoall of equal blocks only. With unequal splits each rank's
//! blocks are padded to the largest block any rank sends, moved by one equal alltoall, and cut back
//! on arrival: correct for any splits, at the cost of moving ranks x largest block per rank (skewed
//! splits move more bytes than an alltoallv would; docs/pytorch.md says so). Before any data moves,
//! the ranks compare what each says it sends with what the receiver expects (one alltoall of the
//! counts, one allreduce of the largest block and of the first disagreement), so a mismatch fails
//! on every rank at once, naming the pair, instead of one rank hanging or reading garbage.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <tutti/tutti.hpp>

#include "checks.hpp"

namespace tutti_torch::unequal_alltoall {

//! Rows each rank sends to and receives from every rank, and the elements of one row.
struct plan {
  std::vector<std::int64_t> send_rows, receive_rows;
  std::int64_t row_elements = 1;
  site where;
};

//! The splits as rows per rank (none given: equal), checked against the tensors in the caller's thread.
inline std::vector<std::int64_t> rows_of(const std::vector<int64_t>& splits, const at::Tensor& t, int ranks,
                                         const char* which, const site& where) {
  const std::int64_t rows = t.dim() ? t.size(0) : 0;
  if (splits.empty()) {
    TORCH_CHECK(rows % ranks == 0, where, ": the ", which, " has ", rows, " rows, not a multiple of ", ranks,
                " (give ", which, "_split_sizes)");
    return std::vector<std::int64_t>(static_cast<std::size_t>(ranks), rows / ranks);
  }
  TORCH_CHECK(static_cast<int>(splits.size()) == ranks, where, ": ", which, "_split_sizes has ", splits.size(),
              " entries; one per rank (", ranks, ") expected");
  std::int64_t sum = 0;
  for (auto s : splits) {
    TORCH_CHECK(s >= 0, where, ": ", which, "_split_sizes holds ", s, "; sizes must not be negative");
    sum += s;
  }
  TORCH_CHECK(sum == rows, where, ": ", which, "_split_sizes add up to ", sum, " rows; the ", which, " has ", rows);
  return {splits.begin(), splits.end()};
}

inline plan plan_of(const at::Tensor& input, const at::Tensor& output, const std::vector<int64_t>& input_splits,
                    const std::vector<int64_t>& output_splits, int ranks, const site& where) {
  TORCH_CHECK(input.dim() >= 1 && output.dim() >= 1, where, ": split sizes need tensors of at least one dimension");
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), where, ": input (", input.scalar_type(), ") and output (",
              output.scalar_type(), ") must have one dtype");
  TORCH_CHECK(input.sizes().slice(1) == output.sizes().slice(1), where, ": input ", input.sizes(), " and output ",
              output.sizes(), " must have the same row shape (all but the first dimension)");
  (void)view_of(input, where), (void)view_of(output, where);  // CPU, contiguous, a dtype tutti moves
  plan p{rows_of(input_splits, input, ranks, "input", where), rows_of(output_splits, output, ranks, "output", where),
         1, where};
  for (std::int64_t d = 1; d < input.dim(); ++d) p.row_elements *= input.size(d);
  return p;
}

//! On the group's worker: the counts compared, then the padded exchange (see the top of this file).
template <class Comm>
void run(Comm& c, const plan& p, const at::Tensor& input, const at::Tensor& output) {
  const auto ranks = static_cast<std::int64_t>(p.send_rows.size());
  std::vector<std::int64_t> sent = p.send_rows, told(p.send_rows.size());
  c.alltoall(tutti::tensor_view{reinterpret_cast<std::byte*>(sent.data()), sent.size(), tutti::dtype::i64},
             tutti::tensor_view{reinterpret_cast<std::byte*>(told.data()), told.size(), tutti::dtype::i64});
  // told[r]: the rows rank r says it sends here; what this rank finds wrong in them, in words.
  std::string wrong;
  for (std::int64_t r = 0; r < ranks; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (told[i] != p.receive_rows[i])
      wrong += (wrong.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " sends " +
               std::to_string(told[i]) + " rows here, output_split_sizes expects " + std::to_string(p.receive_rows[i]);
  }
  // Every rank learns the largest block and whether any rank found a disagreement.
  std::vector<std::int64_t> agreed{*std::max_element(p.send_rows.begin(), p.send_rows.end()), wrong.empty() ? 0 : 1};
  c.allreduce(tutti::tensor_view{reinterpret_cast<std::byte*>(agreed.data()), agreed.size(), tutti::dtype::i64},
              tutti::op::max);
  if (agreed[1] != 0)
    throw tutti::invalid_argument("tutti: rank " + std::to_string(p.where.rank) + ": " + p.where.collective +
                                  ": the ranks' split sizes disagree, nothing was moved: " +
                                  (wrong.empty() ? std::string("another rank names the pair") : wrong));
  const std::int64_t block = agreed[0] * p.row_elements;
  if (block == 0) return;
  const auto flat_in = input.reshape({-1});
  auto flat_out = output.view({-1});
  auto padded_in = at::zeros({ranks * block}, input.options());
  auto padded_out = at::empty({ranks * block}, input.options());
  std::int64_t at_row = 0;
  for (std::int64_t r = 0; r < ranks; ++r) {
    const auto n = p.send_rows[static_cast<std::size_t>(r)] * p.row_elements;
    if (n) padded_in.narrow(0, r * block, n).copy_(flat_in.narrow(0, at_row * p.row_elements, n));
    at_row += p.send_rows[static_cast<std::size_t>(r)];
  }
  c.alltoall(view_of(padded_in, p.where), view_of(padded_out, p.where));
  at_row = 0;
  for (std::int64_t r = 0; r < ranks; ++r) {
    const auto n = p.receive_rows[static_cast<std::size_t>(r)] * p.row_elements;
    if (n) flat_out.narrow(0, at_row * p.row_elements, n).copy_(padded_out.narrow(0, r * block, n));
    at_row += p.receive_rows[static_cast<std::size_t>(r)];
  }
}

}  // namespace tutti_torch::unequal_alltoall
