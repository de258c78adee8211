//! @file halving_doubling.hpp  algorithm::halving_doubling's tuning: its three size crossovers.
#pragma once
#include <array>
#include <cstddef>

#include "tutti/tuner/knob.hpp"

namespace tutti::tuner {

//! None of these three has been measured on tutti yet (set when halving_doubling was written,
//! commit 9640d66, 2026-11-22): the tuner's tables will replace them.
struct halving_doubling_tuning {
  static constexpr std::string_view name = "halving_doubling";
  //! broadcast from this size on is scatter + allgather (van de Geijn: ~2·S per rank instead of
  //! S·log2 n at the root); below it the binomial tree's ceil(log2 n) latencies win. Not measured;
  //! chosen because it is the usual MPI crossover (MPICH's and Open MPI's tuned defaults sit at
  //! 12–512 KiB depending on world size).
  std::size_t scatter_broadcast_bytes = std::size_t{64} << 10;
  //! reduce up to this size is a binomial tree (log2 n steps instead of halving's 2·log2 p). Not
  //! measured, and no reason was recorded (MPICH's matching default,
  //! MPIR_CVAR_REDUCE_SHORT_MSG_SIZE, is 2 KiB).
  std::size_t tree_reduce_bytes = std::size_t{8} << 10;
  //! alltoall blocks up to this size go by Bruck: each of its ceil(log2 n) messages carries about
  //! n/2 blocks, so it sends (n/2)·log2(n) blocks instead of n-1 — a win only while latency rules.
  //! Not measured; chosen because it is MPICH's default (MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE = 256).
  std::size_t bruck_block_bytes = 256;

  //! What a tuning table may set (tuner/knobs.hpp): "halving_doubling.<field>".
  static constexpr std::array knobs = {
      knob<halving_doubling_tuning>{"scatter_broadcast_bytes", &halving_doubling_tuning::scatter_broadcast_bytes},
      knob<halving_doubling_tuning>{"tree_reduce_bytes", &halving_doubling_tuning::tree_reduce_bytes},
      knob<halving_doubling_tuning>{"bruck_block_bytes", &halving_doubling_tuning::bruck_block_bytes}};
};

}  // namespace tutti::tuner
