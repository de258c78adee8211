//! @file launched_world.hpp  Test setup: this process is one rank of a job started by a launcher
//! (tutti-run, mpirun, or a script playing torchrun), over transport::shm or any Transport with a
//! from_env() (transport::multi_node across network namespaces). The suite runs once, at the
//! launched world size.
#pragma once
#include <vector>

#include <tutti/bootstrap/rank_info.hpp>
#include <tutti/communicator.hpp>
#include <tutti/transport/shm.hpp>

namespace tutti::testing {

template <class Algorithm, class Transport = transport::shm, class Codec = codec::none>
struct launched_world {
  using communicator_type = communicator<Transport, Algorithm, Codec>;
  static constexpr const char* name = Transport::name;
  static std::vector<int> world_sizes() { return {rank_info_from_env().world_size}; }

  //! Every test case makes its own communicator: the segments of the last one are already unlinked.
  template <class F>
  static void run(int, F&& fn) {
    auto comm = communicator_type::from_env();
    fn(comm);
  }
};

}  // namespace tutti::testing
