//! @file export_fixture.hpp  The tuning table every export check reads: export_test.cpp's
//! parsers and the peers themselves (peers/export_peer_tables.cpp writes it for check_*.sh).
//! Four layouts of a multi_node job (1x2, 1x4, 2x2, 4x1), every mapping rule used at least once;
//! the sizes sit where the peer checks probe either side of a boundary.
#pragma once
#include <cstdint>
#include <string>
#include <tutti/tuner/export_common.hpp>
#include <utility>

namespace export_fixture {

using namespace tutti;
using namespace tutti::tuner;
inline constexpr std::uint64_t inf = exporting::unbounded;

inline row make_row(collective c, std::uint64_t lo, std::uint64_t hi, layout l, std::string alg,
                    dtype_class d = dtype_class::floating) {
  row r;
  r.collective_kind = c;
  r.min_bytes = lo;
  r.max_bytes = hi;
  r.where = l;
  r.algorithm = std::move(alg);
  r.dtypes = d;
  return r;
}

inline table make() {
  const layout one_by_two{2, 1, 2}, one_by_four{4, 1, 4}, two_by_two{4, 2, 2}, four_by_one{4, 4, 1};
  table t;
  t.source = "tests/tuner/export_fixture.hpp";
  t.made.transport = "multi_node";
  t.made.hosts = {"a", "b"};
  t.rows = {
      make_row(collective::allreduce, 0, inf, one_by_two, "tree"),
      make_row(collective::allreduce, 0, inf, one_by_two, "ring", dtype_class::integer),
      make_row(collective::allreduce, 0, 2047, one_by_four, "halving_doubling"),
      make_row(collective::allreduce, 2048, 65535, one_by_four, "direct"),
      make_row(collective::allreduce, 65536, inf, one_by_four, "ring"),
      make_row(collective::broadcast, 0, inf, one_by_four, "halving_doubling"),
      make_row(collective::alltoall, 0, inf, one_by_four, "halving_doubling"),
      make_row(collective::barrier, 0, inf, one_by_four, "tree"),
      make_row(collective::reduce, 0, inf, one_by_four, "automatic"),  // -> direct here
      make_row(collective::reduce_scatter, 0, 1019, one_by_four, "halving_doubling"),
      make_row(collective::reduce_scatter, 1020, inf, one_by_four, "ring"),
      make_row(collective::allgather, 0, inf, one_by_four, "ring"),
      make_row(collective::allgather, 0, inf, two_by_two, "ring"),
      make_row(collective::allreduce, 0, 4095, two_by_two, "hierarchical<direct, tree>"),
      make_row(collective::allreduce, 4096, inf, two_by_two, "automatic"),  // -> hierarchical<direct, ring>
      make_row(collective::allreduce, 0, inf, four_by_one, "hierarchical<direct, ring>"),  // -> ring
      make_row(collective::reduce_scatter, 0, inf, four_by_one, "halving_doubling"),
      make_row(collective::broadcast, 0, inf, four_by_one, "ring"),
  };
  t.rows[6].tuning = {{"halving_doubling.bruck_block_bytes", 512}};  // the alltoall row
  return t;
}

}  // namespace export_fixture
