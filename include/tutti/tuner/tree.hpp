//! @file tree.hpp  algorithm::tree's tuning: chunks in flight per tree.
#pragma once
#include <cstddef>

namespace tutti::tuner {

struct tree_tuning {
  //! Chunks whose sends may be in flight per tree (compile-time: it sizes request arrays and the
  //! accumulators kept in scratch). Not measured (commit e399749, 2026-11-22); 2 is
  //! double buffering: the least that overlaps one chunk's send with the next chunk's reduction.
  static constexpr std::size_t window = 2;
};

}  // namespace tutti::tuner
