//! @file process_group.hpp  tutti as a torch.distributed backend (issue 25): a c10d ProcessGroup
//! whose collectives are a tutti communicator's (make_group.hpp picks the communicator: shm on one
//! host, multi_node across hosts).
//!
//! Arguments are checked in the calling thread (a refusal raises there, as torch's own backends do,
//! naming rank and collective: checks.hpp); the collective then runs on the group's one worker
//! thread, in the order the calls were made (the same on every rank), and its Work completes when
//! it has run: wait() (with torch's optional timeout) returns or raises the collective's
//! tutti::error, and the Work's future (what DDP waits on) completes with it.
#pragma once
#include <pybind11/pybind11.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <tutti/core/background_worker.hpp>
#include <tutti/tutti.hpp>

#include "checks.hpp"
#include "codec_communicators.hpp"
#include "collective_work.hpp"
#include "unequal_alltoall.hpp"

namespace tutti_torch {

//! What torch.distributed calls a backend: in torch 2 a c10d::Backend, which torch wraps in a
//! ProcessGroup of its own; in torch 1.13 the ProcessGroup itself (the same virtual functions).
#if TUTTI_TORCH_MAJOR >= 2
using c10d_backend = c10d::Backend;
#else
using c10d_backend = c10d::ProcessGroup;
#endif

//! What the Python module reaches whatever the group's communicator: the DDP hook's allreduce.
class group_base : public c10d_backend {
 public:
  using c10d_backend::c10d_backend;
  //! `bucket` (float32, in place) averaged over the group through `codec`'s compressed allreduce
  //! (codec_communicators.hpp), queued behind the group's other calls; `index` keys its residual.
  virtual c10::intrusive_ptr<c10d::Work> codec_allreduce(at::Tensor& bucket, const std::string& codec,
                                                         std::int64_t index) = 0;
};

template <class Comm>
class process_group final : public group_base {
 public:
  using codecs_type = codec_communicators<typename Comm::transport_type>;

  process_group(int rank, int size, std::unique_ptr<Comm> comm, std::unique_ptr<codecs_type> codecs)
      : group_base(rank, size), comm_(std::move(comm)), codecs_(std::move(codecs)) {}

  //! The worker finishes what is queued first. Completing a Work completes its future, whose
  //! continuations may be Python (a DDP hook's then()) and need the GIL, which the thread destroying
  //! the group (dist.destroy_process_group) holds: release it meanwhile, or both wait for ever
  //! (seen: hook_test.py hung at exit about one run in three).
  ~process_group() override {
    if (PyGILState_Check()) {
      pybind11::gil_scoped_release unlocked;
      worker_.reset();
    } else {
      worker_.reset();
    }
  }

  const std::string getBackendName() const override { return "tutti"; }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override {
    const auto v = view_of(only_tensor(tensors, at("allreduce")), at("allreduce"));
    const auto o = op_of(opts.reduceOp, at("allreduce"));
    return queue(c10d::OpType::ALLREDUCE, tensors, [=](Comm& c) { c.allreduce(v, o); });
  }
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override {
    std::vector<tutti::tensor_view> vs;
    for (const auto& t : tensors) vs.push_back(view_of(t, at("allreduce_coalesced")));
    const auto o = op_of(opts.reduceOp, at("allreduce_coalesced"));
    return queue(c10d::OpType::ALLREDUCE_COALESCED, tensors, [=](Comm& c) {
      for (const auto& v : vs) c.allreduce(v, o);
    });
  }
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override {
    const auto v = view_of(only_tensor(tensors, at("broadcast")), at("broadcast"));
    const int root = static_cast<int>(opts.rootRank);
    return queue(c10d::OpType::BROADCAST, tensors, [=](Comm& c) { c.broadcast(v, root); });
  }
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override {
    const auto v = view_of(only_tensor(tensors, at("reduce")), at("reduce"));
    const auto o = op_of(opts.reduceOp, at("reduce"));
    const int root = static_cast<int>(opts.rootRank);
    return queue(c10d::OpType::REDUCE, tensors, [=](Comm& c) { c.reduce(v, o, root); });
  }
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions&) override {
    const auto& in = only_tensor(inputs, at("allgather"));
    const auto iv = view_of(in, at("allgather"));
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                at("allgather"), ": one list of ", getSize(), " output tensors expected");
    for (const auto& o : outputs[0])
      TORCH_CHECK(o.numel() == in.numel() && o.scalar_type() == in.scalar_type(),
                  at("allgather"), ": every output tensor must be the input's size and dtype");
    auto flat = at::empty({getSize() * in.numel()}, in.options());
    const auto fv = view_of(flat, at("allgather"));
    std::vector<at::Tensor> outs = outputs[0];
    return queue(c10d::OpType::ALLGATHER, outs, [=, n = in.numel(), size = getSize()](Comm& c) {
      c.allgather(iv, fv);
      for (int r = 0; r < size; ++r) outs[static_cast<std::size_t>(r)].copy_(flat.narrow(0, r * n, n).view_as(outs[0]));
    }, {in, flat});
  }
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions&) override {
    TORCH_CHECK(output.numel() == input.numel() * getSize(), at("all_gather_into_tensor"), ": the output holds ",
                output.numel(), " elements, ", getSize(), " x ", input.numel(), " expected");
    const auto iv = view_of(input, at("all_gather_into_tensor"));
    const auto ov = view_of(output, at("all_gather_into_tensor"));
    return queue(c10d::OpType::_ALLGATHER_BASE, {output}, [=](Comm& c) { c.allgather(iv, ov); }, {input});
  }
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(input.numel() == output.numel() * getSize(), at("reduce_scatter_tensor"), ": the input holds ",
                input.numel(), " elements, ", getSize(), " x ", output.numel(), " expected");
    const auto iv = view_of(input, at("reduce_scatter_tensor"));
    const auto ov = view_of(output, at("reduce_scatter_tensor"));
    const auto o = op_of(opts.reduceOp, at("reduce_scatter_tensor"));
    return queue(c10d::OpType::_REDUCE_SCATTER_BASE, {output},
                 [=](Comm& c) { c.reduce_scatter(iv, ov, o); }, {input});
  }
  //! all_to_all_single. Equal splits (none given): one alltoall. Unequal: unequal_alltoall.hpp.
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits, const c10d::AllToAllOptions&) override {
    const site where = at("all_to_all_single");
    if (input_splits.empty() && output_splits.empty()) {
      TORCH_CHECK(input.numel() == output.numel() && input.numel() % getSize() == 0, where,
                  ": input and output must hold the same number of elements, a multiple of ", getSize(), " (got ",
                  input.numel(), " and ", output.numel(), ")");
      const auto iv = view_of(input, where);
      const auto ov = view_of(output, where);
      return queue(c10d::OpType::ALLTOALL_BASE, {output}, [=](Comm& c) { c.alltoall(iv, ov); }, {input});
    }
    const auto plan = unequal_alltoall::plan_of(input, output, input_splits, output_splits, getSize(), where);
    return queue(c10d::OpType::ALLTOALL_BASE, {output},
                 [=](Comm& c) { unequal_alltoall::run(c, plan, input, output); }, {input});
  }
  //! all_to_all of one tensor per rank, all the same size: packed into one buffer each way.
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions&) override {
    TORCH_CHECK(static_cast<int>(inputs.size()) == getSize() && static_cast<int>(outputs.size()) == getSize(),
                at("all_to_all"), ": one input and one output tensor per rank expected");
    for (std::size_t r = 0; r < inputs.size(); ++r)
      TORCH_CHECK(inputs[r].numel() == inputs[0].numel() && outputs[r].numel() == inputs[0].numel() &&
                      inputs[r].scalar_type() == inputs[0].scalar_type() &&
                      outputs[r].scalar_type() == inputs[0].scalar_type(),
                  at("all_to_all"), ": only tensors of one size and dtype are supported (unequal sizes are not built yet)");
    auto packed_in = packed_of(inputs);
    auto packed_out = at::empty_like(packed_in);
    const auto iv = view_of(packed_in, at("all_to_all"));
    const auto ov = view_of(packed_out, at("all_to_all"));
    std::vector<at::Tensor> outs = outputs;
    return queue(c10d::OpType::ALLTOALL, outs, [=, n = inputs[0].numel()](Comm& c) {
      c.alltoall(iv, ov);
      for (std::size_t r = 0; r < outs.size(); ++r)
        outs[r].copy_(packed_out.narrow(0, static_cast<int64_t>(r) * n, n).view_as(outs[r]));
    }, {packed_in, packed_out});
  }
  //! reduce_scatter of one input tensor per rank, all the output's size: packed, then reduce_scatter_tensor's way.
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    const site where = at("reduce_scatter");
    const auto& out = only_tensor(outputs, where);
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(), where, ": one list of ",
                getSize(), " input tensors expected");
    for (const auto& t : inputs[0])
      TORCH_CHECK(t.numel() == out.numel() && t.scalar_type() == out.scalar_type(), where,
                  ": every input tensor must be the output's size and dtype");
    auto packed = packed_of(inputs[0]);
    const auto iv = view_of(packed, where);
    const auto ov = view_of(out, where);
    const auto o = op_of(opts.reduceOp, where);
    return queue(c10d::OpType::REDUCE_SCATTER, outputs, [=](Comm& c) { c.reduce_scatter(iv, ov, o); }, {packed});
  }
  //! gather to one rank: each other rank sends its tensor to the root, which receives them all into
  //! one buffer (posted at once; point-to-point, point_to_point.hpp) and copies them out.
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override {
    const site where = at("gather");
    const auto& in = only_tensor(inputs, where);
    const bool root = opts.rootRank == getRank();
    check_root_list(outputs, root, in, "output", "input", where);
    const auto iv = view_of(in, where);
    auto flat = root ? at::empty({getSize() * in.numel()}, in.options()) : at::Tensor();
    std::vector<at::Tensor> outs = root ? outputs[0] : std::vector<at::Tensor>{};
    const int to = static_cast<int>(opts.rootRank);
    return queue(c10d::OpType::GATHER, outs, [=, me = getRank(), size = getSize(), n = in.numel()](Comm& c) {
      if (n == 0) return;
      if (me != to) {
        auto sent = c.send(iv, to, unequal_alltoall::exchange_tag);
        return c.wait(sent);
      }
      every_other_rank(c, size, me, [&](int r) {
        return c.recv(view_of(flat.narrow(0, r * n, n), where), r, unequal_alltoall::exchange_tag);
      });
      for (std::size_t r = 0; r < outs.size(); ++r)
        outs[r].copy_(static_cast<int>(r) == me ? in : flat.narrow(0, static_cast<int64_t>(r) * n, n).view_as(outs[r]));
    }, {in, flat});
  }
  //! scatter from one rank: the root sends each rank its tensor (point-to-point), keeping its own.
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    const site where = at("scatter");
    const auto& out = only_tensor(outputs, where);
    const bool root = opts.rootRank == getRank();
    check_root_list(inputs, root, out, "input", "output", where);
    auto flat = root ? packed_of(inputs[0]) : at::Tensor();
    const auto ov = view_of(out, where);
    const int from = static_cast<int>(opts.rootRank);
    return queue(c10d::OpType::SCATTER, outputs, [=, me = getRank(), size = getSize(), n = out.numel()](Comm& c) {
      if (n == 0) return;
      if (me != from) {
        auto received = c.recv(ov, from, unequal_alltoall::exchange_tag);
        return c.wait(received);
      }
      out.copy_(flat.narrow(0, static_cast<int64_t>(me) * n, n).view_as(out));
      every_other_rank(c, size, me, [&](int r) {
        return c.send(view_of(flat.narrow(0, r * n, n), where), r, unequal_alltoall::exchange_tag);
      });
    }, {flat});
  }
  //! send / recv (isend / irecv, batch_isend_irecv): the communicator's point-to-point
  //! (tutti/communicator/point_to_point.hpp), in the group's call order like the collectives. The
  //! worker posts the operation and polls it between the tasks queued meanwhile (p2p_poll), so two
  //! ranks that each send to the other before receiving (an exchange) both complete.
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override {
    const site where = at("send");
    const auto v = view_of(only_tensor(tensors, where), where);
    check_peer(dst, tag, "dst", where);
    return point_to_point(c10d::OpType::SEND, tensors, [=](Comm& c) { return c.send(v, dst, to_tag(tag)); });
  }
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override {
    const site where = at("recv");
    const auto v = view_of(only_tensor(tensors, where), where);
    check_peer(src, tag, "src", where);
    return point_to_point(c10d::OpType::RECV, tensors, [=](Comm& c) { return c.recv(v, src, to_tag(tag)); });
  }
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>&, int) override {
    TORCH_CHECK(false, at("recv"), ": a receive from any source is not supported by the tutti backend (its "
                "transports match a named peer); pass src");
    std::abort();  // not reached
  }
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions&) override {
    return queue(c10d::OpType::BARRIER, {}, [](Comm& c) { c.barrier(); });
  }

  c10::intrusive_ptr<c10d::Work> codec_allreduce(at::Tensor& bucket, const std::string& codec,
                                                 std::int64_t index) override {
    const site where = at("codec hook");
    TORCH_CHECK(codecs_type::known(codec), where, ": unknown codec '", codec, "' (fp16, bf16, int8, topk, onebit)");
    TORCH_CHECK(bucket.scalar_type() == at::kFloat, where, ": codec ", codec,
                " carries float32 gradients; this bucket holds ", bucket.scalar_type(),
                " (register the hook on a float32 model, or use DDP's default allreduce)");
    const auto v = view_of(bucket, where);
    return queue(c10d::OpType::ALLREDUCE, {bucket}, [this, v, codec, index](Comm&) { codecs_->of(codec).average(v, index); });
  }

 private:
  [[nodiscard]] site at(const char* collective) const { return {getRank(), collective}; }

  //! The root's side of gather and scatter: `post(r)` (a send or receive) for every other rank at
  //! once, then a wait on each.
  template <class Post>
  static void every_other_rank(Comm& c, int size, int me, Post post) {
    std::vector<tutti::p2p_request<typename Comm::transport_type>> posted;
    for (int r = 0; r < size; ++r)
      if (r != me) posted.push_back(post(r));
    for (auto& q : posted) c.wait(q);
  }

  //! One flat tensor of `ts` one after another (the same dtype, checked by the caller).
  static at::Tensor packed_of(const std::vector<at::Tensor>& ts) {
    std::vector<at::Tensor> flat;
    for (const auto& t : ts) flat.push_back(t.reshape({-1}));
    return at::cat(flat);
  }

  //! gather's outputs and scatter's inputs: a list of one tensor per rank, each `like`'s size and
  //! dtype, on the root only (`which`: the list's name, `other`: `like`'s).
  void check_root_list(const std::vector<std::vector<at::Tensor>>& lists, bool root, const at::Tensor& like,
                       const char* which, const char* other, const site& where) const {
    TORCH_CHECK(lists.size() == (root ? 1u : 0u) || (!root && lists.size() == 1 && lists[0].empty()), where,
                root ? ": the root gives one list of " : ": only the root gives ", which, " tensors");
    if (!root) return;
    TORCH_CHECK(static_cast<int>(lists[0].size()) == getSize(), where, ": the root's list holds ", lists[0].size(),
                " tensors; one per rank (", getSize(), ") expected");
    for (const auto& t : lists[0])
      TORCH_CHECK(t.numel() == like.numel() && t.scalar_type() == like.scalar_type(), where, ": every ", which,
                  " tensor must be the ", other, "'s size and dtype");
  }

  void check_peer(int peer, int tag, const char* which, const site& where) const {
    TORCH_CHECK(peer >= 0 && peer < getSize() && peer != getRank(), where, ": ", which, "=", peer,
                " is not another rank of the group's ", getSize(), peer == getRank() ? " (it is this rank)" : "");
    TORCH_CHECK(tag >= 0, where, ": tag=", tag, " is negative");
  }
  static std::uint32_t to_tag(int tag) { return static_cast<std::uint32_t>(tag); }

  //! Posts a send or receive (`post` returns the communicator's request) on the worker, which then
  //! polls it (p2p_poll) until it completes; the Work completes with it.
  template <class Post>
  c10::intrusive_ptr<c10d::Work> point_to_point(c10d::OpType type, std::vector<at::Tensor> tensors, Post post) {
    auto work = c10::make_intrusive<collective_work>(getRank(), type, std::move(tensors), std::vector<at::Tensor>{});
    (void)worker_->post([this, work, post]() mutable {
      try {
        p2p_poll{this, work, std::make_shared<p2p_request>(post(*comm_))}();
      } catch (...) {
        work->complete(std::current_exception());
      }
    });
    return work;
  }

  //! One look at a posted send or receive: complete its Work, or queue the next look behind what
  //! was queued meanwhile. A blocking wait here would deadlock an exchange: the worker can run a
  //! send's wait before the caller has queued the receive that goes with it (seen: two ranks each
  //! waiting on a 2 MiB send, their receives never posted). Looks back to back at first, then
  //! yielding, then 50 us apart, so a long wait costs little CPU and delays what is queued behind
  //! it by at most that.
  using p2p_request = tutti::p2p_request<typename Comm::transport_type>;
  struct p2p_poll {
    process_group* group;
    c10::intrusive_ptr<collective_work> work;
    std::shared_ptr<p2p_request> posted;
    unsigned looks = 0;
    void operator()() {
      try {
        if (group->comm_->test(*posted)) return work->complete(nullptr);
      } catch (...) {
        return work->complete(std::current_exception());
      }
      if (++looks > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
      else if (looks > 100) std::this_thread::yield();
      (void)group->worker_->post(*this);
    }
  };

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

  std::unique_ptr<Comm> comm_;
  std::unique_ptr<codecs_type> codecs_;  // made on the worker only, so never touched by two threads
  // Runs the group's collectives in call order; destroyed first, after running what is queued. Each
  // task catches its own error (it goes to its Work), so the worker never skips a later one.
  std::unique_ptr<tutti::background_worker> worker_ = std::make_unique<tutti::background_worker>("tutti-torch", collective_work::linger());
};

}  // namespace tutti_torch
