//! @file pipeline.hpp  The communicator's pipelining unit: the chunk chunked schedules cut messages into.
#pragma once
#include <cstddef>

namespace tutti::tuner {

struct pipeline_tuning {
  //! The default of TUTTI_CHUNK_BYTES (communicator_options::chunk_bytes): ring, tree and the
  //! compressed schedules pipeline in chunks of this. Not measured when chosen (commit 1365b03,
  //! 2026-11-21: big enough that a chunk's per-message cost is small against its copy, small enough
  //! that a ring of a few ranks pipelines a 64 MiB gradient); since then the 2-rank sweep
  //! (bench/results/allreduce-2ranks-20261122.md) and the 1 Gbit/s namespace runs
  //! (bench/results/codecs-netns-1gbit-20261125.md) ran with it, but no other value was compared.
  std::size_t chunk_bytes = std::size_t{512} << 10;
};

}  // namespace tutti::tuner
