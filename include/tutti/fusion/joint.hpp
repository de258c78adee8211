//! @file joint.hpp  Joint tuning: the fusion engine's view of the communicator's algorithm control (algorithm::tuned).
//!
//! A communicator whose algorithm chooses per call at run time (algorithm::tuned<A...>) offers a
//! control (comm.algorithm_control(): candidates(), force(i), release()); its fusion port hands
//! that control to the engine. The autotuner (fusion::autotuned) may then search "which candidate
//! runs the engine's collectives" beside the threshold and the cycle time. Rank 0 decides: the
//! choice is parameters::algorithm in the negotiation's response, so every rank applies the same
//! choice from the same round on. Each rank forces the candidate for that round's batches only and
//! releases it before any blocking collective gets its turn (grant() comes after the batches):
//! the caller's own collectives keep the table's choice, and a switch happens only between
//! collectives, never during one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/core/error.hpp"

namespace tutti::fusion {

//! A candidate the tuner may choose: its index among the control's candidates (parameters::algorithm
//! carries it plus one) and its name, for the tuner's log.
struct algorithm_choice {
  std::uint32_t candidate = 0;
  std::string_view name;
};

//! A port (port.hpp) whose communicator's algorithm has a run-time control.
template <class P>
concept choosing_port = requires(const P& p, std::uint32_t i) {
  p.algorithm_control().candidates();
  p.algorithm_control().force(i);
  p.algorithm_control().release();
};

//! The candidates the engine may run: those with an allreduce (the only collective it runs), less
//! hierarchical<I, X> where nodes hold different numbers of ranks (the control's layout has
//! ranks_per_node 0): it refuses that layout on every rank, and a refused batch fails its tensors.
//! Empty when the port has no control.
template <class Port>
[[nodiscard]] std::vector<algorithm_choice> algorithm_choices(const Port& port) {
  std::vector<algorithm_choice> out;
  if constexpr (choosing_port<Port>) {
    const auto& control = port.algorithm_control();
    bool uneven = false;
    if constexpr (requires { control.layout().ranks_per_node; }) uneven = control.layout().ranks_per_node == 0;
    const auto all = control.candidates();
    for (std::size_t i = 0; i < all.size(); ++i)
      if (all[i].has[static_cast<std::size_t>(collective::allreduce)] &&
          !(uneven && std::string_view(all[i].name).starts_with("hierarchical")))
        out.push_back({static_cast<std::uint32_t>(i), all[i].name});
  }
  return out;
}

//! For one round's batches: forces candidate `choice - 1` and releases it when it goes out of
//! scope (also when a batch throws). Nothing when `choice` is 0 or the port has no control. A
//! choice the control does not have is a malformed response (the same build on every rank sends
//! and reads it): a transport_error.
template <class Port>
class forced_algorithm {
 public:
  forced_algorithm(const Port& port, std::uint32_t choice) : port_(&port) {
    if (choice == 0) return;
    if constexpr (choosing_port<Port>) {
      auto& control = port.algorithm_control();
      if (choice > control.candidates().size())
        throw transport_error("fusion negotiation: algorithm choice " + std::to_string(choice) +
                              " names no candidate (there are " + std::to_string(control.candidates().size()) + ")");
      control.force(choice - 1);
      forced_ = true;
    } else {
      throw transport_error("fusion negotiation: an algorithm choice (" + std::to_string(choice) +
                            ") for a communicator whose algorithm has no control");
    }
  }
  ~forced_algorithm() {
    if constexpr (choosing_port<Port>) {
      if (forced_) port_->algorithm_control().release();
    }
  }
  forced_algorithm(const forced_algorithm&) = delete;
  forced_algorithm& operator=(const forced_algorithm&) = delete;

 private:
  const Port* port_;
  bool forced_ = false;
};

}  // namespace tutti::fusion
