//! @file unequal_alltoall.hpp  all_to_all_single with unequal splits: an alltoallv over the
//! communicator's point-to-point.
//!
//! tutti's communicator has an alltoall of equal blocks only. With unequal splits each rank posts a
//! receive from every rank that sends it rows and a send to every rank it sends rows, then waits for
//! them all (communicator::send / recv, point_to_point.hpp): every block moves once, at its own size.
//! Before any data moves, the ranks compare what each says it sends with what the receiver expects
//! (one alltoall of the counts, one allreduce of the first disagreement), so a mismatch fails on
//! every rank at once, naming the pair, instead of one rank hanging or reading garbage, and the
//! group stays usable. (Until 2026-12-06 the blocks were padded to the largest and moved by one
//! equal alltoall: ranks x largest block per rank.)
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <tutti/tutti.hpp>

#include "checks.hpp"

namespace tutti_torch::unequal_alltoall {

//! The point-to-point tag of the backend's own exchanges (this one, gather, scatter): above every
//! tag torch passes (an int, at least 0), so never a user's send/recv.
inline constexpr std::uint32_t exchange_tag = 0xFFFFFF00u;

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
  // Every rank learns whether any rank found a disagreement.
  std::int64_t disagreed = wrong.empty() ? 0 : 1;
  c.allreduce(tutti::tensor_view{reinterpret_cast<std::byte*>(&disagreed), 1, tutti::dtype::i64}, tutti::op::max);
  if (disagreed != 0)
    throw tutti::invalid_argument("tutti: rank " + std::to_string(p.where.rank) + ": " + p.where.collective +
                                  ": the ranks' split sizes disagree, nothing was moved: " +
                                  (wrong.empty() ? std::string("another rank names the pair") : wrong));
  const auto flat_in = input.reshape({-1});
  auto flat_out = output.view({-1});
  const auto me = static_cast<std::int64_t>(p.where.rank);
  std::vector<tutti::p2p_request<typename Comm::transport_type>> posted;
  std::int64_t in_row = 0, out_row = 0;
  for (std::int64_t r = 0; r < ranks; ++r) {
    const auto i = static_cast<std::size_t>(r);
    const auto n_in = p.send_rows[i] * p.row_elements, n_out = p.receive_rows[i] * p.row_elements;
    auto to = flat_out.narrow(0, out_row * p.row_elements, n_out);
    const auto from = flat_in.narrow(0, in_row * p.row_elements, n_in);
    if (r == me) {
      if (n_in) to.copy_(from);
    } else {
      if (n_out) posted.push_back(c.recv(view_of(to, p.where), static_cast<int>(r), exchange_tag));
      if (n_in) posted.push_back(c.send(view_of(from, p.where), static_cast<int>(r), exchange_tag));
    }
    in_row += p.send_rows[i];
    out_row += p.receive_rows[i];
  }
  for (auto& q : posted) c.wait(q);
}

}  // namespace tutti_torch::unequal_alltoall
