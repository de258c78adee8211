//! @file ring.hpp  algorithm::ring's tuning: how many chunks its chains keep in flight.
#pragma once
#include <cstddef>

namespace tutti::tuner {

//! Compile-time: each window sizes an array of requests on the stack (no allocation per
//! collective), so it cannot change per call; the chunk it counts in is the communicator's
//! (pipeline_tuning, TUTTI_CHUNK_BYTES), which can.
struct ring_tuning {
  //! broadcast: chunk sends in flight before the oldest must have been taken. Not measured (commit
  //! 1365b03, 2026-11-21, with no reason recorded): enough sends to keep the next hop busy while
  //! bounding the requests held for a slow neighbour.
  static constexpr std::size_t broadcast_window = 8;
  //! allgather over several chunks (ring::allgather_streamed): sends in flight, and receives posted
  //! one fewer ahead. broadcast's value, not measured on its own (the stream's gain at 10 Gbit/s,
  //! bench/results/netns-goals-final-20261127/experiments/, was measured with it).
  static constexpr std::size_t allgather_window = 8;
  //! reduce: partial sums in flight before the oldest must have been taken; each takes a chunk of
  //! scratch. Not measured (commit 6f3ed22, 2026-11-22, with no reason
  //! recorded); smaller than broadcast's because each slot also holds a chunk of scratch.
  static constexpr std::size_t reduce_window = 4;
};

}  // namespace tutti::tuner
