//! @file process_group.hpp  tutti as a torch.distributed backend (issue 25): a c10d ProcessGroup
//! whose collectives are a tutti communicator's.
//!
//! First slice, and only that (docs/pytorch.md says what is built): one host, transport::shm,
//! algorithm::automatic. Arguments are checked in the calling thread (a refusal raises there, as
//! torch's own backends do); the collective then runs on the group's one worker thread, in the order
//! the calls were made (the same on every rank), and its Work completes when it has run: wait()
//! (with torch's optional timeout) returns or raises the collective's tutti::error, and the Work's
//! future (what DDP waits on) completes with it. Rendezvous: torch's own Store, the one
//! init_process_group made (env://, tcp://, or a Store passed in): rank 0 writes a fresh job id there
//! and every rank reads it, so the shm segments of two groups never collide. torch's store and not
//! tutti's: under torchrun torch's TCPStore already holds MASTER_PORT, and a process group's keys
//! belong in the group's (prefixed) store.
#pragma once
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <tutti/core/background_worker.hpp>
#include <tutti/tutti.hpp>

namespace tutti_torch {

//! torch's dtype as tutti's; refused with a sentence for the ones tutti does not reduce.
inline tutti::dtype dtype_of(const at::Tensor& t, const char* collective) {
  switch (t.scalar_type()) {
    case at::kFloat: return tutti::dtype::f32;
    case at::kDouble: return tutti::dtype::f64;
    case at::kHalf: return tutti::dtype::f16;
    case at::kBFloat16: return tutti::dtype::bf16;
    case at::kInt: return tutti::dtype::i32;
    case at::kLong: return tutti::dtype::i64;
    case at::kByte: return tutti::dtype::u8;
    case at::kChar: return tutti::dtype::i8;
    case at::kShort: return tutti::dtype::i16;
    default:
      TORCH_CHECK(false, "tutti: ", collective, ": tensors of dtype ", t.scalar_type(),
                  " are not supported (float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8 are)");
  }
}

inline tutti::op op_of(const c10d::ReduceOp& o, const char* collective) {
  switch (static_cast<c10d::ReduceOp::RedOpType>(o)) {
    case c10d::ReduceOp::SUM: return tutti::op::sum;
    case c10d::ReduceOp::AVG: return tutti::op::avg;
    case c10d::ReduceOp::PRODUCT: return tutti::op::prod;
    case c10d::ReduceOp::MIN: return tutti::op::min;
    case c10d::ReduceOp::MAX: return tutti::op::max;
    default: TORCH_CHECK(false, "tutti: ", collective, ": this reduce op is not supported (SUM, AVG, PRODUCT, MIN, MAX are)");
  }
}

//! One CPU tensor, contiguous, as tutti's view of its bytes; anything else refused naming why.
inline tutti::tensor_view view_of(const at::Tensor& t, const char* collective) {
  TORCH_CHECK(t.device().is_cpu(), "tutti: ", collective, ": only CPU tensors are supported (got ", t.device(), ")");
  TORCH_CHECK(t.is_contiguous(), "tutti: ", collective, ": the tensor must be contiguous (call .contiguous() first)");
  return {static_cast<std::byte*>(t.data_ptr()), static_cast<std::size_t>(t.numel()), dtype_of(t, collective)};
}

inline const at::Tensor& only_tensor(const std::vector<at::Tensor>& ts, const char* collective) {
  TORCH_CHECK(ts.size() == 1, "tutti: ", collective, ": one tensor per process (got ", ts.size(), ")");
  return ts.front();
}

//! A collective's Work: completed by the group's worker once the collective has run (finish()
//! wakes wait(), which rethrows its error), and its future with it.
class collective_work : public c10d::Work {
 public:
  collective_work(int rank, c10d::OpType type, std::vector<at::Tensor> result, std::vector<at::Tensor> held)
      : c10d::Work(rank, type), result_(std::move(result)), held_(std::move(held)),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}
  std::vector<at::Tensor> result() override { return result_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  //! The worker's: the collective ran, and failed with `failed` unless it is null.
  void complete(std::exception_ptr failed) {
    finish(failed);
    if (failed) future_->setError(failed);
    else future_->markCompleted(c10::IValue(result_));
  }

 private:
  std::vector<at::Tensor> result_;  // the outputs, alive until the Work goes
  std::vector<at::Tensor> held_;    // the inputs and temporaries the collective reads, likewise
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class process_group : public c10d::ProcessGroup {
 public:
  using communicator_type = tutti::communicator<tutti::transport::shm, tutti::algorithm::automatic>;

  process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout)
      : c10d::ProcessGroup(rank, size) {
    tutti::rank_info info;
    info.rank = rank;
    info.world_size = size;
    info.local_rank = rank;
    info.local_size = size;
    info.launcher = "torch.distributed";
    info.job_id = agreed_job_id(*store, rank);
    auto options = tutti::communicator_options::from_env();
    options.timeout = timeout;
    comm_ = std::make_unique<communicator_type>(std::make_unique<tutti::transport::shm>(info), options);
  }

  const std::string getBackendName() const override { return "tutti"; }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override {
    const auto v = view_of(only_tensor(tensors, "allreduce"), "allreduce");
    const auto o = op_of(opts.reduceOp, "allreduce");
    return queue(c10d::OpType::ALLREDUCE, tensors, [=](communicator_type& c) { c.allreduce(v, o); });
  }
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override {
    std::vector<tutti::tensor_view> vs;
    for (const auto& t : tensors) vs.push_back(view_of(t, "allreduce_coalesced"));
    const auto o = op_of(opts.reduceOp, "allreduce_coalesced");
    return queue(c10d::OpType::ALLREDUCE_COALESCED, tensors, [=](communicator_type& c) {
      for (const auto& v : vs) c.allreduce(v, o);
    });
  }
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override {
    const auto v = view_of(only_tensor(tensors, "broadcast"), "broadcast");
    const int root = static_cast<int>(opts.rootRank);
    return queue(c10d::OpType::BROADCAST, tensors, [=](communicator_type& c) { c.broadcast(v, root); });
  }
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override {
    const auto v = view_of(only_tensor(tensors, "reduce"), "reduce");
    const auto o = op_of(opts.reduceOp, "reduce");
    const int root = static_cast<int>(opts.rootRank);
    return queue(c10d::OpType::REDUCE, tensors, [=](communicator_type& c) { c.reduce(v, o, root); });
  }
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions&) override {
    const auto& in = only_tensor(inputs, "allgather");
    const auto iv = view_of(in, "allgather");
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                "tutti: allgather: one list of ", getSize(), " output tensors expected");
    for (const auto& o : outputs[0])
      TORCH_CHECK(o.numel() == in.numel() && o.scalar_type() == in.scalar_type(),
                  "tutti: allgather: every output tensor must be the input's size and dtype");
    auto flat = at::empty({getSize() * in.numel()}, in.options());
    const auto fv = view_of(flat, "allgather");
    std::vector<at::Tensor> outs = outputs[0];
    return queue(c10d::OpType::ALLGATHER, outs, [=, n = in.numel(), size = getSize()](communicator_type& c) {
      c.allgather(iv, fv);
      for (int r = 0; r < size; ++r) outs[static_cast<std::size_t>(r)].copy_(flat.narrow(0, r * n, n).view_as(outs[0]));
    }, {in, flat});
  }
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions&) override {
    TORCH_CHECK(output.numel() == input.numel() * getSize(), "tutti: all_gather_into_tensor: the output holds ",
                output.numel(), " elements, ", getSize(), " x ", input.numel(), " expected");
    const auto iv = view_of(input, "all_gather_into_tensor");
    const auto ov = view_of(output, "all_gather_into_tensor");
    return queue(c10d::OpType::_ALLGATHER_BASE, {output}, [=](communicator_type& c) { c.allgather(iv, ov); }, {input});
  }
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(input.numel() == output.numel() * getSize(), "tutti: reduce_scatter_tensor: the input holds ",
                input.numel(), " elements, ", getSize(), " x ", output.numel(), " expected");
    const auto iv = view_of(input, "reduce_scatter_tensor");
    const auto ov = view_of(output, "reduce_scatter_tensor");
    const auto o = op_of(opts.reduceOp, "reduce_scatter_tensor");
    return queue(c10d::OpType::_REDUCE_SCATTER_BASE, {output},
                 [=](communicator_type& c) { c.reduce_scatter(iv, ov, o); }, {input});
  }
  //! all_to_all_single with equal splits (none given, or all equal); unequal splits are refused.
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits, const c10d::AllToAllOptions&) override {
    const auto equal = [&](const std::vector<int64_t>& splits, const at::Tensor& t) {
      if (splits.empty()) return true;
      const int64_t rows = t.dim() ? t.size(0) : 0;
      for (auto s : splits)
        if (s * getSize() != rows) return false;
      return true;
    };
    TORCH_CHECK(equal(output_splits, output) && equal(input_splits, input),
                "tutti: all_to_all_single: only equal splits are supported (unequal split sizes are not built yet)");
    TORCH_CHECK(input.numel() == output.numel() && input.numel() % getSize() == 0,
                "tutti: all_to_all_single: input and output must hold the same number of elements, a multiple of ",
                getSize(), " (got ", input.numel(), " and ", output.numel(), ")");
    const auto iv = view_of(input, "all_to_all_single");
    const auto ov = view_of(output, "all_to_all_single");
    return queue(c10d::OpType::ALLTOALL_BASE, {output}, [=](communicator_type& c) { c.alltoall(iv, ov); }, {input});
  }
  //! all_to_all of one tensor per rank, all the same size: packed into one buffer each way.
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions&) override {
    TORCH_CHECK(static_cast<int>(inputs.size()) == getSize() && static_cast<int>(outputs.size()) == getSize(),
                "tutti: all_to_all: one input and one output tensor per rank expected");
    for (std::size_t r = 0; r < inputs.size(); ++r)
      TORCH_CHECK(inputs[r].numel() == inputs[0].numel() && outputs[r].numel() == inputs[0].numel() &&
                      inputs[r].scalar_type() == inputs[0].scalar_type() &&
                      outputs[r].scalar_type() == inputs[0].scalar_type(),
                  "tutti: all_to_all: only tensors of one size and dtype are supported (unequal sizes are not built yet)");
    auto packed_in = at::cat(inputs.empty() ? std::vector<at::Tensor>{} : [&] {
      std::vector<at::Tensor> flat;
      for (const auto& t : inputs) flat.push_back(t.reshape({-1}));
      return flat;
    }());
    auto packed_out = at::empty_like(packed_in);
    const auto iv = view_of(packed_in, "all_to_all");
    const auto ov = view_of(packed_out, "all_to_all");
    std::vector<at::Tensor> outs = outputs;
    return queue(c10d::OpType::ALLTOALL, outs, [=, n = inputs[0].numel()](communicator_type& c) {
      c.alltoall(iv, ov);
      for (std::size_t r = 0; r < outs.size(); ++r)
        outs[r].copy_(packed_out.narrow(0, static_cast<int64_t>(r) * n, n).view_as(outs[r]));
    }, {packed_in, packed_out});
  }
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions&) override {
    return queue(c10d::OpType::BARRIER, {}, [](communicator_type& c) { c.barrier(); });
  }

 private:
  //! Rank 0 draws the job id and publishes it in the group's store; the others read it there.
  static std::string agreed_job_id(c10d::Store& store, int rank) {
    const std::string key = "tutti/job_id";
    if (rank == 0) {
      std::random_device rd;
      const std::string id = "torch-" + std::to_string(rd()) + std::to_string(rd());
      store.set(key, std::vector<uint8_t>(id.begin(), id.end()));
      return id;
    }
    const auto bytes = store.get(key);
    return {bytes.begin(), bytes.end()};
  }

  //! Queues `body` for the worker. The Work holds `result` (its outputs) and `held` (what the
  //! collective reads: inputs, packed buffers), so no tensor it touches is freed before it has run.
  template <class F>
  c10::intrusive_ptr<c10d::Work> queue(c10d::OpType type, std::vector<at::Tensor> result, F&& body,
                                       std::vector<at::Tensor> held = {}) {
    auto work = c10::make_intrusive<collective_work>(getRank(), type, std::move(result), std::move(held));
    (void)worker_->post([this, work, body = std::forward<F>(body)]() mutable {
      std::exception_ptr failed;
      try {
        body(*comm_);
      } catch (...) {
        failed = std::current_exception();  // the collective's tutti::error: raised by wait()
      }
      work->complete(failed);
    });
    return work;
  }

  std::unique_ptr<communicator_type> comm_;
  // Runs the group's collectives in call order; destroyed first, after running what is queued. Each
  // task catches its own error (it goes to its Work), so the worker never skips a later one.
  std::unique_ptr<tutti::background_worker> worker_ = std::make_unique<tutti::background_worker>("tutti-torch");
};

}  // namespace tutti_torch
