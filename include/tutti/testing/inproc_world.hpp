//! @file inproc_world.hpp  Test setup: a communicator whose ranks are threads (transport::inproc).
//! Conformance suites are templated on a setup like this one; a shm or ucx setup with the same
//! `run` signature runs the same suites.
#pragma once
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <tutti/communicator.hpp>
#include <tutti/transport/inproc.hpp>

#include <tutti/testing/node_layout.hpp>

namespace tutti::testing {

//! Layout (node_layout.hpp) places the ranks on simulated nodes; one node by default.
//! Codec: what allreduce's elements become on the wire (codec::none by default).
template <class Algorithm, class Layout = one_node, class Codec = codec::none>
struct inproc_world {
  using communicator_type = communicator<transport::inproc, Algorithm, Codec>;
  static constexpr const char* name = "inproc";
  static std::vector<int> world_sizes() { return Layout::world_sizes(); }

  //! Runs fn(comm) on every rank; rethrows the lowest rank's failure after all ranks finish.
  template <class F>
  static void run(int world, F&& fn, communicator_options options = communicator_options::from_env()) {
    auto errors = transport::inproc::run(
        world,
        [&](transport::inproc& t) {
          communicator_type comm(t, options);
          fn(comm);
        },
        node_ids(world, &Layout::node_of));
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }
};

}  // namespace tutti::testing
