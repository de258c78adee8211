//! @file process_group.hpp  tutti as a torch.distributed backend (issue 25): a c10d ProcessGroup
//! whose collectives are a tutti communicator's.
//!
//! First slice, and only that (docs/pytorch.md says what is built): one host, transport::shm,
//! algorithm::automatic; every call runs to completion in the calling thread and returns a Work
//! that is already complete (its future too, for DDP). Rendezvous: torch's own Store, the one
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

//! A Work that is complete when made: its result, or the error the collective threw.
class completed_work : public c10d::Work {
 public:
  completed_work(int rank, c10d::OpType type, std::vector<at::Tensor> result, std::exception_ptr failed)
      : c10d::Work(rank, type), result_(std::move(result)),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
    if (failed) {
      future_->setError(failed);
    } else {
      future_->markCompleted(c10::IValue(result_));
    }
    finish(failed);
  }
  std::vector<at::Tensor> result() override { return result_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  std::vector<at::Tensor> result_;
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
    return run(c10d::OpType::ALLREDUCE, tensors, [&] {
      comm_->allreduce(view_of(only_tensor(tensors, "allreduce"), "allreduce"), op_of(opts.reduceOp, "allreduce"));
    });
  }
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override {
    return run(c10d::OpType::ALLREDUCE_COALESCED, tensors, [&] {
      for (auto& t : tensors) comm_->allreduce(view_of(t, "allreduce_coalesced"), op_of(opts.reduceOp, "allreduce_coalesced"));
    });
  }
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override {
    return run(c10d::OpType::BROADCAST, tensors, [&] {
      comm_->broadcast(view_of(only_tensor(tensors, "broadcast"), "broadcast"), static_cast<int>(opts.rootRank));
    });
  }
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override {
    return run(c10d::OpType::REDUCE, tensors, [&] {
      comm_->reduce(view_of(only_tensor(tensors, "reduce"), "reduce"), op_of(opts.reduceOp, "reduce"),
                    static_cast<int>(opts.rootRank));
    });
  }
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions&) override {
    return run(c10d::OpType::ALLGATHER, inputs, [&] {
      const auto& in = only_tensor(inputs, "allgather");
      TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                  "tutti: allgather: one list of ", getSize(), " output tensors expected");
      auto flat = at::empty({getSize() * in.numel()}, in.options());
      comm_->allgather(view_of(in, "allgather"), view_of(flat, "allgather"));
      for (int r = 0; r < getSize(); ++r) outputs[0][r].copy_(flat.narrow(0, r * in.numel(), in.numel()).view_as(in));
    });
  }
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions&) override {
    std::vector<at::Tensor> out{output};
    return run(c10d::OpType::_ALLGATHER_BASE, out, [&] {
      TORCH_CHECK(output.numel() == input.numel() * getSize(), "tutti: all_gather_into_tensor: the output holds ",
                  output.numel(), " elements, ", getSize(), " x ", input.numel(), " expected");
      comm_->allgather(view_of(input, "all_gather_into_tensor"), view_of(output, "all_gather_into_tensor"));
    });
  }
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override {
    std::vector<at::Tensor> out{output};
    return run(c10d::OpType::_REDUCE_SCATTER_BASE, out, [&] {
      TORCH_CHECK(input.numel() == output.numel() * getSize(), "tutti: reduce_scatter_tensor: the input holds ",
                  input.numel(), " elements, ", getSize(), " x ", output.numel(), " expected");
      comm_->reduce_scatter(view_of(input, "reduce_scatter_tensor"), view_of(output, "reduce_scatter_tensor"),
                            op_of(opts.reduceOp, "reduce_scatter_tensor"));
    });
  }
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions&) override {
    std::vector<at::Tensor> none;
    return run(c10d::OpType::BARRIER, none, [&] { comm_->barrier(); });
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

  template <class F>
  c10::intrusive_ptr<c10d::Work> run(c10d::OpType type, const std::vector<at::Tensor>& result, F&& body) {
    std::exception_ptr failed;
    try {
      body();
    } catch (const c10::Error&) {
      throw;  // a refused argument: raised at the call, as torch's own backends do
    } catch (...) {
      failed = std::current_exception();  // the collective's tutti::error: raised by wait()
    }
    return c10::make_intrusive<completed_work>(getRank(), type, result, failed);
  }

  std::unique_ptr<communicator_type> comm_;
};

}  // namespace tutti_torch
