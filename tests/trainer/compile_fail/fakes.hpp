// A model, a communicator and an optimiser that data_parallel_trainer accepts, each small enough
// that a compile-fail test can take one member away and show the sentence that names it.
#pragma once
#include <cstdint>
#include <istream>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include <tutti/codec/none.hpp>
#include <tutti/trainer/data_parallel_trainer.hpp>

namespace fakes {

struct model {
  struct batch_type {};
  std::vector<tutti::trainer::parameter> parameters() { return {}; }
  tutti::trainer::metrics forward_backward(const batch_type&, const tutti::trainer::gradient_ready&) { return {}; }
  tutti::trainer::metrics evaluate(const batch_type&) { return {}; }
};

//! Every member the trainer calls; Codec picks whether error feedback is needed.
template <class Codec = tutti::codec::none>
struct communicator {
  using codec_type = Codec;
  int rank() const { return 0; }
  int size() const { return 1; }
  tutti::fusion::handle allreduce_async(std::string, tutti::tensor_view, tutti::op,
                                        tutti::fusion::completion::callback = {}) {
    return {};
  }
  void broadcast(tutti::tensor_view, int) {}
  template <class In, class Out>
  void allgather(const In&, Out&&) {}
  void barrier() {}
};

struct optimizer {
  void step(std::span<const tutti::trainer::parameter>, double) {}
  void save(std::ostream&) const {}
  void load(std::istream&) {}
};

}  // namespace fakes
