//! @file comm.hpp  One rank's communicator as tutti-tune's sweep sees it: a small virtual interface
//! over communicator<Transport, tuned<A...>> and its algorithm_control(), so the sweep, the
//! statistics and the provenance compile once rather than once per transport.
//!
//! The indirect call costs nanoseconds; the smallest collective measured takes microseconds.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "tutti/core/collective.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/tensor_view.hpp"
#include "tutti/tuner/overrides.hpp"
#include "tutti/tuner/selection.hpp"
#include "tutti/tuner/table.hpp"

namespace tune {

class tune_comm {
 public:
  virtual ~tune_comm() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  //! tuned<A...>'s candidates, in order, with the collectives each has.
  [[nodiscard]] virtual std::span<const tutti::tuner::candidate_info> candidates() const = 0;
  //! This communicator's world, nodes and ranks per node (from the node map).
  [[nodiscard]] virtual tutti::tuner::layout layout() const = 0;
  //! Every later call runs `candidate` with `tuning` (null: its defaults). Every rank forces the
  //! same thing at the same point of its call sequence: the sweep below makes sure of it.
  virtual void force(std::uint32_t candidate, const tutti::tuner::overrides* tuning) = 0;
  virtual void release() = 0;
  //! The candidate the last collective ran (what the table chose, once released).
  [[nodiscard]] virtual std::uint32_t last_run() const = 0;
  //! One collective of `count` elements as collective_descriptor counts them (per rank for
  //! reduce_scatter and allgather, per block for alltoall), sum, root 0; out of place.
  virtual void call(tutti::collective c, const void* in, void* out, std::size_t count, tutti::dtype t) = 0;
  virtual void barrier() = 0;
  //! In place, the largest over ranks: every rank records the same numbers. Runs candidate 0
  //! (every candidate has allreduce), so the caller forces again before it measures.
  virtual void max_over_ranks(std::span<double> values) = 0;
  //! Every rank's `mine.size()` bytes, rank by rank, into `all` (candidate 0, like max_over_ranks).
  virtual void gather_bytes(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
};

//! tune_comm over a communicator whose algorithm is tuned<A...> (comm.algorithm_control()).
template <class Comm>
class comm_adapter final : public tune_comm {
 public:
  explicit comm_adapter(Comm& comm) : comm_(comm) {}
  [[nodiscard]] int rank() const override { return comm_.rank(); }
  [[nodiscard]] int size() const override { return comm_.size(); }
  [[nodiscard]] std::span<const tutti::tuner::candidate_info> candidates() const override {
    return comm_.algorithm_control().candidates();
  }
  [[nodiscard]] tutti::tuner::layout layout() const override { return comm_.algorithm_control().layout(); }
  void force(std::uint32_t candidate, const tutti::tuner::overrides* tuning) override {
    comm_.algorithm_control().force(candidate, tuning);
  }
  void release() override { comm_.algorithm_control().release(); }
  [[nodiscard]] std::uint32_t last_run() const override { return comm_.algorithm_control().last_run(); }

  void call(tutti::collective c, const void* in, void* out, std::size_t count, tutti::dtype t) override {
    using tutti::collective;
    const std::size_t all = count * static_cast<std::size_t>(comm_.size());
    const auto op = tutti::op::sum;
    switch (c) {
      case collective::allreduce: comm_.allreduce(view(in, count, t), view(out, count, t), op); break;
      case collective::reduce_scatter: comm_.reduce_scatter(view(in, all, t), view(out, count, t), op); break;
      case collective::allgather: comm_.allgather(view(in, count, t), view(out, all, t)); break;
      case collective::broadcast: comm_.broadcast(view(in, count, t), view(out, count, t), 0); break;
      case collective::reduce: comm_.reduce(view(in, count, t), view(out, count, t), op, 0); break;
      case collective::alltoall: comm_.alltoall(view(in, all, t), view(out, all, t)); break;
      case collective::barrier: comm_.barrier(); break;
    }
  }
  void barrier() override { comm_.barrier(); }
  void max_over_ranks(std::span<double> values) override {
    comm_.algorithm_control().force(0, nullptr);
    comm_.allreduce(tutti::tensor_view(values.data(), values.size(), tutti::dtype::f64), tutti::op::max);
  }
  void gather_bytes(std::span<const std::byte> mine, std::span<std::byte> all) override {
    comm_.algorithm_control().force(0, nullptr);
    comm_.allgather(tutti::const_tensor_view(mine.data(), mine.size(), tutti::dtype::u8),
                    tutti::tensor_view(all.data(), all.size(), tutti::dtype::u8));
  }

 private:
  static tutti::const_tensor_view view(const void* p, std::size_t n, tutti::dtype t) { return {p, n, t}; }
  static tutti::tensor_view view(void* p, std::size_t n, tutti::dtype t) { return {p, n, t}; }
  Comm& comm_;
};

}  // namespace tune
