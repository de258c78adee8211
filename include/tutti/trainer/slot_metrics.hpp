//! @file slot_metrics.hpp  The trainer's metrics across its slots: summed exactly and in rank order,
//! after checking that every slot reports the same names.
//!
//! Metrics travel by allgather, not allreduce: a communicator's codec (fp16, int8, ...) compresses
//! float allreduces only, and metrics must not be rounded by it; adding in rank order also gives
//! every slot the same bits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/core/fnv1a.hpp"
#include "tutti/core/message.hpp"
#include "tutti/trainer/model.hpp"

namespace tutti::trainer {

//! Element i: the sum over slots of their `mine[i]`.
template <class Communicator>
[[nodiscard]] std::vector<double> sum_over_slots(Communicator& comm, const std::vector<double>& mine) {
  const auto slots = static_cast<std::size_t>(comm.size());
  std::vector<double> all(mine.size() * slots);
  comm.allgather(mine, all);
  std::vector<double> sum(mine.size(), 0.0);
  for (std::size_t r = 0; r < slots; ++r)
    for (std::size_t i = 0; i < mine.size(); ++i) sum[i] += all[r * mine.size() + i];
  return sum;
}

//! Slots with different metric names would sum unrelated numbers: their names' hashes must agree
//! (mismatch naming the first slot that differs from rank 0; `what`: "training", "validation").
template <class Communicator>
void check_metric_names(Communicator& comm, const metrics& m, const char* what) {
  std::string names;
  for (const auto& [name, value] : m) names.append(name).push_back('\0');
  std::vector<std::uint64_t> mine{fnv1a_64(names)}, all(static_cast<std::size_t>(comm.size()));
  comm.allgather(mine, all);
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r] != all[0])
      throw mismatch(on_rank(comm.rank(), "data_parallel_trainer") + "the " + what + " metrics of " +
                     rank_text(static_cast<int>(r)) + " have other names than rank 0's");
}

//! Every slot's training metrics, averaged.
template <class Communicator>
[[nodiscard]] metrics average_over_slots(Communicator& comm, const metrics& mine) {
  check_metric_names(comm, mine, "training");
  std::vector<double> packed;
  for (const auto& [name, value] : mine) packed.push_back(value);
  packed = sum_over_slots(comm, packed);
  metrics out;
  std::size_t i = 0;
  for (const auto& [name, value] : mine) out[name] = packed[i++] / static_cast<double>(comm.size());
  return out;
}

}  // namespace tutti::trainer
