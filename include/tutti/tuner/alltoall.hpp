//! @file alltoall.hpp  The pairwise alltoall's tuning (algorithm/alltoall.hpp; every algorithm uses it).
#pragma once

namespace tutti::tuner {

struct alltoall_tuning {
  //! Steps (one receive and one send each) in flight at once (compile-time: it sizes a request
  //! array on the stack). Not measured (commit 6f3ed22, 2026-11-22, with no reason
  //! recorded): enough steps to overlap their latencies, few enough requests for any transport.
  static constexpr int window = 8;
};

}  // namespace tutti::tuner
