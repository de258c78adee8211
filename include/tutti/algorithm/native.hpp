//! @file native.hpp  algorithm::native — every collective handed to NCCL's own implementation.
//!
//! allreduce, reduce_scatter, allgather, broadcast and reduce are ncclAllReduce, ncclReduceScatter,
//! ncclAllGather, ncclBroadcast and ncclReduce on the transport's stream; alltoall is one group of
//! ncclSend/ncclRecv (never cut: transport::nccl's post_groups says why); barrier is a one-element
//! allreduce on a device scratch word. Each waits for its stream work (deadline and asynchronous-error polling in
//! transport::nccl) before it returns, so the blocking API's contract holds: when a call returns,
//! the output is in device memory and the inputs may be reused.
//!
//! Arguments are checked across ranks in the algorithm's first step (`checks_arguments`): the
//! communicator's own check exchanges host descriptors through the transport, which here moves
//! device memory only. Each rank's 32-byte descriptor goes to pinned host memory, then to device
//! scratch, is all-gathered by NCCL and read back, and judged as the communicator would: one
//! extra small collective per call (TUTTI_CHECK=0 skips it).
//!
//! dtypes and ops (transport/nccl/types.hpp): reductions take every dtype but int16, which NCCL
//! lacks: refused at run time with tutti::invalid_argument after the ranks agreed on the call, so
//! every rank refuses alike. Collectives that reduce nothing move bytes and take any dtype.
//!
//! Lossy codecs (fp16, bf16, int8) on allreduce: tutti's owner schedule on the device, with the
//! CUDA kernels between ncclSend/ncclRecv and ncclAllGather (algorithm/native_codecs.cuh): two
//! quantisations per element whatever the world size, fp32 sums, identical bits on every rank, the
//! CPU path's written bound. native_wire_sum (below) opts into NCCL summing in 16 bits instead. The
//! kernels are compiled by nvcc only: a g++ translation unit that allreduces with a lossy codec over
//! native is a compile-time error in one sentence (compile it with nvcc). Error-feedback codecs
//! (topk, onebit) are refused at compile time. The other collectives move float32 as they are
//! (only allreduce is compressed, as on the CPU path: docs/compression.md).
//!
//! Only over transport::nccl: over any other transport it is a compile-time error in one sentence.
#pragma once
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tutti/algorithm/compressed.hpp"
#include "tutti/codec/concepts.hpp"
#include "tutti/codec/float16.hpp"
#include "tutti/core/collective.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/transport/nccl/transport.hpp"
#include "tutti/transport/nccl/types.hpp"
#if defined(__CUDACC__)
#include "tutti/algorithm/native_codecs.cuh"
#endif

namespace tutti::algorithm {

namespace native_detail {

//! Instantiated by each collective; over another transport, the one error the user sees.
template <class Transport>
constexpr bool over_nccl() {
  static_assert(std::is_same_v<Transport, transport::nccl>,
                "tutti::algorithm::native runs over tutti::transport::nccl only (it hands each collective to "
                "NCCL, on device memory); over another transport choose ring, direct, tree, halving_doubling, "
                "hierarchical<I, X> or automatic");
  return std::is_same_v<Transport, transport::nccl>;
}

//! The lossy codecs native carries, each refusal one sentence (instantiated only with a lossy codec).
template <class Codec>
constexpr bool carried_codec() {
  static_assert(!feedback_codec_policy<Codec>,
                "tutti::algorithm::native does not carry error-feedback codecs (topk, onebit) over NCCL; use "
                "codec::fp16, codec::bf16, codec::int8 or codec::none with it");
  return !feedback_codec_policy<Codec>;
}

//! False, but only once instantiated: the nvcc refusal below fires where a lossy allreduce is used.
template <class Codec>
inline constexpr bool compiled_by_nvcc =
#if defined(__CUDACC__)
    true;
#else
    sizeof(Codec) == 0;
#endif

template <class Codec>
constexpr bool compiled_for_kernels() {
  static_assert(compiled_by_nvcc<Codec> || feedback_codec_policy<Codec>,  // that one has its own sentence
                "tutti::algorithm::native runs lossy codecs (fp16, bf16, int8) with CUDA kernels: compile this "
                "translation unit with nvcc (-std=c++20 --expt-relaxed-constexpr), or use codec::none");
  return compiled_by_nvcc<Codec>;
}

//! What the lossy allreduce runs: native's owner schedule, or native_wire_sum's 16-bit NCCL sum.
enum class lossy_schedule { owner, wire_sum };

}  // namespace native_detail

struct native {
  using tutti_role = role::algorithm;
  static constexpr std::string_view name = "native";
  //! Its buffers may be device memory: the communicator accepts it over transport::nccl.
  static constexpr bool handles_device_memory = true;
  //! Lossy codecs' allreduce: the owner schedule on the device (see the top of this file).
  static constexpr bool carries_lossy_codecs = true;
  //! Arguments are checked in the algorithm (see the top of this file).
  template <class Transport>
  static constexpr bool checks_arguments = std::is_same_v<Transport, transport::nccl>;

  //! Only the cross-rank argument check (for a rank whose own arguments were refused, and as
  //! every collective's first step when checking is on).
  template <class Ctx>
  static void agree(Ctx& c) {
    if constexpr (native_detail::over_nccl<typename Ctx::transport_type>()) {
      const collective_descriptor* mine = c.descriptor();
      if (!mine || c.size() == 1) return;
      auto& tr = c.transport();
      const std::size_t n = static_cast<std::size_t>(c.size()), d = sizeof(collective_descriptor);
      std::byte* host = tr.host_scratch((n + 1) * d);  // [mine][rank 0 .. n-1]
      std::byte* dev = tr.device_scratch((n + 1) * d);
      std::memcpy(host, mine, d);
      const int r = c.rank();
      tr.collective("argument check", c.until(), [&](ncclComm_t comm, cudaStream_t s) {
        TUTTI_NCCL_CHECK(r, "argument check", cudaMemcpyAsync(dev, host, d, cudaMemcpyHostToDevice, s));
        return TUTTI_NCCL_CHECK(r, "argument check", ncclAllGather(dev, dev + d, d, ncclUint8, comm, s));
      });
      // Only now: a non-blocking communicator may still be enqueueing the all-gather until the
      // transport has settled it, and this copy must follow it on the stream.
      tr.on_stream("argument check", c.until(), [&](cudaStream_t s) {
        TUTTI_NCCL_CHECK(r, "argument check", cudaMemcpyAsync(host + d, dev + d, n * d, cudaMemcpyDeviceToHost, s));
      });
      auto all = c.descriptors();
      std::memcpy(all.data(), host + d, n * d);
      c.verify(all);
    }
  }

  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    if constexpr (!Ctx::lossless) {
      lossy_allreduce<native_detail::lossy_schedule::owner>(c, in, out, count, t, o);
    } else if constexpr (native_detail::over_nccl<typename Ctx::transport_type>()) {
      const auto [type, redop] = reduction(c, "allreduce", t, o);
      if (count == 0) return;
      const int r = c.rank();
      c.transport().collective("allreduce", c.until(), [&](ncclComm_t comm, cudaStream_t s) {
        return TUTTI_NCCL_CHECK(r, "allreduce", ncclAllReduce(in, out, count, type, redop, comm, s));
      });
    }
  }

  //! in: count * n elements; out: this rank's count (in place when out == in + rank * count,
  //! which is NCCL's in-place layout too).
  template <class Ctx>
  static void reduce_scatter(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    if constexpr (native_detail::over_nccl<typename Ctx::transport_type>()) {
      const auto [type, redop] = reduction(c, "reduce_scatter", t, o);
      if (count == 0) return;
      const int r = c.rank();
      c.transport().collective("reduce_scatter", c.until(), [&](ncclComm_t comm, cudaStream_t s) {
        return TUTTI_NCCL_CHECK(r, "reduce_scatter", ncclReduceScatter(in, out, count, type, redop, comm, s));
      });
    }
  }

  //! Bytes, not elements: nothing is reduced, so every dtype (int16 too) travels.
  template <class Ctx>
  static void allgather(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    if constexpr (native_detail::over_nccl<typename Ctx::transport_type>()) {
      agree(c);
      const std::size_t bytes = count * size_of(t);
      if (bytes == 0) return;
      const int r = c.rank();
      c.transport().collective("allgather", c.until(), [&](ncclComm_t comm, cudaStream_t s) {
        return TUTTI_NCCL_CHECK(r, "allgather", ncclAllGather(in, out, bytes, ncclUint8, comm, s));
      });
    }
  }

  template <class Ctx>
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t count, dtype t, int root) {
    if constexpr (native_detail::over_nccl<typename Ctx::transport_type>()) {
      agree(c);
      const std::size_t bytes = count * size_of(t);
      if (bytes == 0) return;
      const int r = c.rank();
      c.transport().collective("broadcast", c.until(), [&](ncclComm_t comm, cudaStream_t s) {
        return TUTTI_NCCL_CHECK(r, "broadcast", ncclBroadcast(in, out, bytes, ncclUint8, root, comm, s));
      });
    }
  }

  //! `out` is null on ranks other than root (NCCL reads recvbuff on root only).
  template <class Ctx>
  static void reduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o, int root) {
    if constexpr (native_detail::over_nccl<typename Ctx::transport_type>()) {
      const auto [type, redop] = reduction(c, "reduce", t, o);
      if (count == 0) return;
      const int r = c.rank();
      c.transport().collective("reduce", c.until(), [&](ncclComm_t comm, cudaStream_t s) {
        return TUTTI_NCCL_CHECK(r, "reduce", ncclReduce(in, out, count, type, redop, root, comm, s));
      });
    }
  }

  //! Block j of in to rank j, block j of out from rank j: one group of sends and receives. In place
  //! (in == out), the input is first copied to device scratch, so no block is overwritten before
  //! it is sent.
  template <class Ctx>
  static void alltoall(Ctx& c, const void* in, void* out, std::size_t count, dtype t) {
    if constexpr (native_detail::over_nccl<typename Ctx::transport_type>()) {
      agree(c);
      const std::size_t block = count * size_of(t);
      if (block == 0) return;
      auto& tr = c.transport();
      const int n = c.size(), r = c.rank();
      const auto* src = static_cast<const std::byte*>(in);
      auto* dst = static_cast<std::byte*>(out);
      if (in == out) {
        std::byte* copy = tr.device_scratch(block * static_cast<std::size_t>(n));
        tr.on_stream("alltoall", c.until(), [&](cudaStream_t s) {
          TUTTI_NCCL_CHECK(r, "alltoall", cudaMemcpyAsync(copy, in, block * static_cast<std::size_t>(n),
                                                         cudaMemcpyDeviceToDevice, s));
        });
        src = copy;
      }
      std::vector<transport::nccl::p2p_op> ops;
      ops.reserve(2 * static_cast<std::size_t>(n));
      for (int k = 0; k < n; ++k) {  // [recv p, send p] per peer, in one group
        const int p = (r + k) % n;
        const std::size_t at = static_cast<std::size_t>(p) * block;
        ops.push_back({false, p, dst + at, block});
        ops.push_back({true, p, const_cast<std::byte*>(src + at), block});
      }
      tr.exchange(ops, "alltoall", c.until());
    }
  }

  //! The argument check is itself an all-gather every rank must enter; without it, a one-element
  //! allreduce on a device scratch word.
  template <class Ctx>
  static void barrier(Ctx& c) {
    if constexpr (native_detail::over_nccl<typename Ctx::transport_type>()) {
      if (c.size() == 1) return;
      if (c.descriptor()) return agree(c);
      auto& tr = c.transport();
      void* word = tr.device_scratch(sizeof(std::int32_t));
      const int r = c.rank();
      tr.collective("barrier", c.until(), [&](ncclComm_t comm, cudaStream_t s) {
        return TUTTI_NCCL_CHECK(r, "barrier", ncclAllReduce(word, word, 1, ncclInt32, ncclSum, comm, s));
      });
    }
  }

 protected:
  //! A lossy codec's allreduce: the ranks agree, the codec's arguments are checked (every rank
  //! refuses alike), then the schedule runs on the device (algorithm/native_codecs.cuh). A world of
  //! one runs it too: a job's numbers do not depend on whether it ran alone.
  template <native_detail::lossy_schedule Schedule, class Ctx>
  static void lossy_allreduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    using codec_type = typename Ctx::codec_type;
    if constexpr (native_detail::over_nccl<typename Ctx::transport_type>() &&
                  native_detail::carried_codec<codec_type>() && native_detail::compiled_for_kernels<codec_type>()) {
#if defined(__CUDACC__)
      agree(c);
      check_lossy_arguments(c, t, o);
      if (count == 0) return;
      const float scale = o == op::avg ? 1.0f / static_cast<float>(c.size()) : 1.0f;
      const auto* src = static_cast<const float*>(in);
      auto* dst = static_cast<float*>(out);
      if constexpr (Schedule == native_detail::lossy_schedule::owner)
        native_codecs::owner_allreduce<codec_type>(c, src, dst, count, scale);
      else
        native_codecs::wire_sum_allreduce<codec_type>(c, src, dst, count, scale);
#else
      (void)c, (void)in, (void)out, (void)count, (void)t, (void)o;
#endif
    }
  }

 private:
  //! After the ranks agreed (so every rank refuses alike): NCCL's dtype and op, or
  //! invalid_argument naming rank, collective, dtype and op.
  template <class Ctx>
  static std::pair<ncclDataType_t, ncclRedOp_t> reduction(Ctx& c, const char* collective_name, dtype t, op o) {
    agree(c);
    const std::string refusal = transport::nccl_detail::reduction_refusal(t, o);
    if (!refusal.empty())
      throw invalid_argument(c.where() + "algorithm::native " + collective_name + " with dtype " +
                             std::string(name_of(t)) + ", op " + std::string(name_of(o)) + ": " + refusal);
    // Over one rank an average is the sum (x / 1): ncclSum, because NCCL before 2.29.7 leaves the
    // last count % 32 elements of a one-rank ncclAvg on floats unwritten (NVIDIA/nccl#1950; found
    // by tests/nccl/gpu on an H100 with NCCL 2.28.3: out-of-place float avg of 2^20 + 3 elements
    // came back with 3 stale elements). ncclSum there is a plain copy.
    const ncclRedOp_t redop = o == op::avg && c.size() == 1 ? ncclSum : *transport::nccl_detail::nccl_op_of(o);
    return {*transport::nccl_detail::nccl_type_of(t), redop};
  }
};

//! algorithm::native, except that allreduce with codec::fp16 or codec::bf16 is pack -> ncclAllReduce
//! in 16 bits -> unpack: one NCCL call (its rings, trees, NVLS) instead of the owner schedule's
//! send/receive group and all-gather, but NCCL sums in the wire format, so the error grows with the
//! world size (up to n - 1 roundings of partial sums; wire_sum_bound in
//! tests/nccl/native_codecs_reference.hpp writes the bound) and ranks are not promised identical bits. A separate type, not a flag: the looser bound is then
//! part of the communicator's type, visible where it is declared and the same on every rank, and
//! int8 (whose per-block scales NCCL cannot add) is refused at compile time. Every other
//! collective, and codec::none, is native's.
struct native_wire_sum : native {
  static constexpr std::string_view name = "native_wire_sum";

  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, dtype t, op o) {
    if constexpr (Ctx::lossless) {
      native::allreduce(c, in, out, count, t, o);
    } else {
      using codec_type = typename Ctx::codec_type;
      constexpr bool carried = std::is_same_v<codec_type, codec::fp16> || std::is_same_v<codec_type, codec::bf16> ||
                               feedback_codec_policy<codec_type>;  // that one is refused in one sentence below
      static_assert(carried,
                    "tutti::algorithm::native_wire_sum sums 16-bit floats in NCCL: it carries codec::fp16 and "
                    "codec::bf16 only (int8's per-block scales cannot be added by NCCL; use algorithm::native)");
      if constexpr (carried) lossy_allreduce<native_detail::lossy_schedule::wire_sum>(c, in, out, count, t, o);
    }
  }
};

}  // namespace tutti::algorithm
