//! @file direct.hpp  algorithm::direct's tuning: when allreduce stops being one-shot.
#pragma once
#include <array>
#include <cstddef>

#include "tutti/tuner/knob.hpp"

namespace tutti::tuner {

struct direct_tuning {
  static constexpr std::string_view name = "direct";
  //! allreduce up to this size is one-shot (every rank reduces the whole buffer straight out of the
  //! peers' stages: one synchronisation); above it two-shot (each rank reduces its 1/n, then all
  //! read the results: half the reads, one more synchronisation). Also capped by the transport's
  //! stage (TUTTI_SHM_STAGE_BYTES). Measured when direct was written (commit abbc517, 2026-11-22):
  //! tutti-bench, 2 ranks over shm on the 2-core development VM, float sum — at 64 KiB two-shot
  //! gave 4.5 GB/s against one-shot's 3.2, and at 32 KiB and below one-shot's single
  //! synchronisation wins. Not re-measured at other world sizes.
  std::size_t one_shot_bytes = std::size_t{32} << 10;

  //! What a tuning table may set (tuner/knobs.hpp): "direct.one_shot_bytes".
  static constexpr std::array knobs = {knob<direct_tuning>{"one_shot_bytes", &direct_tuning::one_shot_bytes}};
};

}  // namespace tutti::tuner
