//! @file launched_world.hpp  Test setup: this process is one rank of a job started by a launcher
//! (tutti-run, mpirun), over transport::shm. The suite runs once, at the launched world size.
#pragma once
#include <vector>

#include <tutti/bootstrap/rank_info.hpp>
#include <tutti/communicator.hpp>
#include <tutti/transport/shm.hpp>

namespace tutti::testing {

template <class Algorithm>
struct launched_world {
  using communicator_type = communicator<transport::shm, Algorithm>;
  static constexpr const char* name = "shm (launched)";
  static std::vector<int> world_sizes() { return {rank_info_from_env().world_size}; }

  //! Every test case makes its own communicator: the segments of the last one are already unlinked.
  template <class F>
  static void run(int, F&& fn) {
    auto comm = communicator_type::from_env();
    fn(comm);
  }
};

}  // namespace tutti::testing
