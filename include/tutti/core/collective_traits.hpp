//! @file collective_traits.hpp  One row per tutti::collective: its buffers, counts, in-place layout, root, op.
//!
//! Aluminum describes each operation by traits (IsRootedOp, IsReductionOp) that dispatch and tests
//! read alike; CUTLASS checks can_implement() apart from run(). This table is both for tutti: the
//! communicator's one checked path (communicator/checked_call.hpp) describes, validates and calls
//! every collective from its row, so a rule lives here once instead of in seven copied bodies.
#pragma once
#include <array>
#include <cstddef>
#include <string_view>

#include "tutti/core/collective.hpp"

namespace tutti {

//! How the element counts of send ("in") and recv ("out") relate on one rank (n = world size).
enum class count_rule : std::uint8_t {
  none,                 //!< no buffers (barrier)
  same,                 //!< in.count == out.count (checked where both are read: on root for rooted ones)
  in_is_out_times_n,    //!< reduce_scatter: in holds n blocks of out.count
  out_is_in_times_n,    //!< allgather: out holds n blocks of in.count
  same_blocks_of_n,     //!< alltoall: in.count == out.count, a multiple of n
};

//! The one overlapping layout of in and out a collective accepts (any other overlap is refused).
enum class in_place_rule : std::uint8_t {
  none,                 //!< no buffers
  same_buffer,          //!< in.data == out.data
  out_is_rank_block,    //!< reduce_scatter: out is this rank's block of in
  in_is_rank_block,     //!< allgather: in is this rank's block of out
};

//! Which count the cross-rank descriptor (collective_descriptor::count) carries, and the
//! algorithm is called with.
enum class described_count : std::uint8_t {
  none,         //!< 0
  in,           //!< in.count
  out,          //!< out.count
  in_per_rank,  //!< in.count / n (alltoall's block)
};

struct collective_traits {
  collective kind;
  bool rooted;              //!< takes a root (descriptor carries it; others carry -1)
  bool reducing;            //!< takes an op (descriptor carries it; others carry op::sum)
  bool buffers;             //!< takes in/out buffers at all
  bool in_on_root_only;     //!< in is read on root only (broadcast): elsewhere out stands in for it
  bool out_on_root_only;    //!< out is written on root only (reduce): elsewhere it is ignored
  bool type_of_out;         //!< the descriptor's dtype is out's (broadcast), else in's
  bool encoded;             //!< the communicator's codec carries its data (allreduce)
  count_rule counts;
  in_place_rule in_place;
  described_count described;
  std::string_view signature;  //!< what an Algorithm must declare to implement it
};

inline constexpr std::array<collective_traits, 7> collective_table{{
    {collective::allreduce, false, true, true, false, false, false, true, count_rule::same,
     in_place_rule::same_buffer, described_count::in,
     "static void allreduce(Context&, const void* in, void* out, std::size_t count, tutti::dtype, tutti::op)"},
    {collective::reduce_scatter, false, true, true, false, false, false, false, count_rule::in_is_out_times_n,
     in_place_rule::out_is_rank_block, described_count::out,
     "static void reduce_scatter(Context&, const void* in, void* out, std::size_t count_per_rank, tutti::dtype, "
     "tutti::op)"},
    {collective::allgather, false, false, true, false, false, false, false, count_rule::out_is_in_times_n,
     in_place_rule::in_is_rank_block, described_count::in,
     "static void allgather(Context&, const void* in, void* out, std::size_t count_per_rank, tutti::dtype)"},
    {collective::broadcast, true, false, true, true, false, true, false, count_rule::same,
     in_place_rule::same_buffer, described_count::out,
     "static void broadcast(Context&, const void* in, void* out, std::size_t count, tutti::dtype, int root)"},
    {collective::barrier, false, false, false, false, false, false, false, count_rule::none, in_place_rule::none,
     described_count::none, "static void barrier(Context&)"},
    {collective::reduce, true, true, true, false, true, false, false, count_rule::same, in_place_rule::same_buffer,
     described_count::in,
     "static void reduce(Context&, const void* in, void* out, std::size_t count, tutti::dtype, tutti::op, int root)"},
    {collective::alltoall, false, false, true, false, false, false, false, count_rule::same_blocks_of_n,
     in_place_rule::same_buffer, described_count::in_per_rank,
     "static void alltoall(Context&, const void* in, void* out, std::size_t count_per_rank, tutti::dtype)"},
}};

//! The row of `c` (the table is in enum order: checked below).
[[nodiscard]] constexpr const collective_traits& traits_of(collective c) noexcept {
  return collective_table[static_cast<std::size_t>(c)];
}
[[nodiscard]] constexpr bool is_rooted(collective c) noexcept { return traits_of(c).rooted; }
[[nodiscard]] constexpr bool is_reducing(collective c) noexcept { return traits_of(c).reducing; }

namespace detail {
constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < collective_table.size(); ++i)
    if (static_cast<std::size_t>(collective_table[i].kind) != i) return false;
  return true;
}
}  // namespace detail
static_assert(detail::table_in_enum_order(), "collective_table: rows must follow enum class collective");

}  // namespace tutti
