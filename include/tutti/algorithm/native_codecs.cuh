//! @file native_codecs.cuh  Lossy codecs (fp16, bf16, int8) over NCCL: tutti's owner schedule with
//! the CUDA kernels, and the 16-bit NCCL sum that algorithm::native_wire_sum opts into.
//!
//! Included by algorithm/native.hpp when nvcc compiles it (__CUDACC__): the kernels are templates
//! the user's nvcc instantiates (cuda/kernels.cuh). A g++ translation unit that uses a lossy codec
//! with native gets one compile-time sentence instead (native.hpp).
//!
//! owner_allreduce: algorithm/compressed.hpp's schedule on the device, in one round
//! (native_codecs_layout.hpp has the layout and says why). On the transport's stream:
//!   1. encode: every other rank's segment of in * scale, once (pack kernel / int8 quantise), and
//!      the owner's own segment times scale into the fp32 accumulator (a float-to-float pack);
//!   2. one group of ncclSend/ncclRecv: each encoding to its segment's owner;
//!   3. the owner adds the contributions in fp32 (decode-reduce kernel / int8 dequantise with
//!      accumulate) in ring order, encodes the sum once, and ncclAllGather (in place) gives every
//!      rank every owner's encoded sum;
//!   4. every rank decodes the same bytes into out (unpack kernel / int8 dequantise).
//! Each element is therefore the CPU path's: two quantisations whatever the world size, the same
//! written bound (testing/compressed_conformance.hpp), identical bits on every rank. The host waits
//! only for NCCL to have enqueued each step (transport::nccl::enqueue, post) and once, at the end,
//! for the stream (finish_on_stream: deadline and asynchronous-error polling). Scratch is the
//! transport's grow-only device and pinned host scratch: nothing is allocated once it has grown.
//!
//! wire_sum_allreduce: pack in * scale to 16 bits, ncclAllReduce in 16 bits (in place), unpack.
//! NCCL sums in the wire format, so the error grows with the world size (the bound is wire_sum_bound
//! in tests/nccl/native_codecs_reference.hpp); half the traffic of the owner schedule's two phases
//! is the same, but NCCL's allreduce is one call with its own algorithms (rings, trees, NVLS).
#pragma once
#ifndef __CUDACC__
#error "tutti/algorithm/native_codecs.cuh launches CUDA kernels: compile this translation unit with nvcc"
#endif
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tutti/algorithm/native_codecs_layout.hpp"
#include "tutti/codec/float16.hpp"
#include "tutti/codec/int8.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/cuda/multi_tensor.cuh"
#include "tutti/cuda/multi_tensor.hpp"
#include "tutti/transport/nccl/transport.hpp"

namespace tutti::algorithm::native_codecs {

//! The element type of a 16-bit codec's wire, for the kernels; int8 has none.
template <class Codec>
struct wire_element {
  static constexpr bool sixteen_bit = false;
};
template <>
struct wire_element<codec::fp16> {
  static constexpr bool sixteen_bit = true;
  using type = half;
  static constexpr ncclDataType_t nccl = ncclFloat16;
};
template <>
struct wire_element<codec::bf16> {
  static constexpr bool sixteen_bit = true;
  using type = bfloat16;
  static constexpr ncclDataType_t nccl = ncclBfloat16;
};

//! "allreduce (codec fp16, dtype float32)": what errors name; made once per codec.
template <class Codec>
const std::string& what_allreduce() {
  static const std::string w = "allreduce (codec " + std::string(Codec::name) + ", dtype float32)";
  return w;
}

namespace detail {

//! Appends a table for `tensors` (fill_table: flags from the device addresses) at `rows[at]`;
//! returns where it starts and how many rows it has.
struct table_span {
  std::size_t first = 0, rows = 0;
};
inline table_span add_table(std::span<const cuda::tensor_desc> tensors, const cuda::multi_tensor_layout& layout,
                            cuda::chunk* rows, std::size_t& at, std::size_t capacity) {
  const std::size_t written = cuda::fill_table(tensors, layout, std::span(rows + at, capacity - at));
  const table_span t{at, written};
  at += written;
  return t;
}

//! The stored pointer of a 16-bit wire element type.
template <class W>
using wire_t = cuda::storage_t<W>;

}  // namespace detail

//! out = decode(encode(sum over ranks of decode(encode(in * scale)))) with the owner schedule (see
//! the top of this file); count > 0, the ranks' arguments already agreed.
template <class Codec, class Ctx>
void owner_allreduce(Ctx& c, const float* in, float* out, std::size_t count, float scale) {
  constexpr bool sixteen = wire_element<Codec>::sixteen_bit;
  auto& tr = c.transport();
  const int n = c.size(), r = c.rank();
  const std::string& what = what_allreduce<Codec>();
  const auto wire = [](std::size_t e) { return Codec::encoded_bytes(dtype::f32, e); };
  const owner_layout l = make_owner_layout(count, n, r, codec_granule<Codec>(), sixteen, wire);
  std::byte* dev = tr.device_scratch(l.total);
  auto* rows = reinterpret_cast<cuda::chunk*>(tr.host_scratch(std::max<std::size_t>(l.table_rows, 1) * sizeof(cuda::chunk)));
  auto* table_dev = reinterpret_cast<cuda::chunk*>(dev + l.tables);
  auto* acc = reinterpret_cast<float*>(dev + l.accumulator);
  const piece mine = l.at(r);
  const float self = scale * c.prescale();
  const auto slot = [&](std::size_t region, int p) { return dev + region + static_cast<std::size_t>(p) * l.slot; };

  // The tables, built on the host into pinned scratch and uploaded by the first step.
  std::size_t at = 0;
  const cuda::tensor_desc own{in + mine.first, mine.size, 0};
  const auto own_table = detail::add_table({&own, 1}, {dtype::f32, dtype::f32, acc}, rows, at, l.table_rows);
  detail::table_span encode_table, sum_table, decode_table;
  if constexpr (sixteen) {
    using W = typename wire_element<Codec>::type;
    const dtype wt = std::is_same_v<W, half> ? dtype::f16 : dtype::bf16;
    const std::size_t slot_elements = l.slot / 2;
    std::vector<cuda::tensor_desc> tensors;  // at most world entries; host memory only
    tensors.reserve(static_cast<std::size_t>(n));
    for (int p = 0; p < n; ++p)
      if (p != r) tensors.push_back({in + l.at(p).first, l.at(p).size, static_cast<std::size_t>(p) * slot_elements});
    encode_table = detail::add_table(tensors, {dtype::f32, wt, dev + l.outgoing}, rows, at, l.table_rows);
    const cuda::tensor_desc sum{acc, mine.size, static_cast<std::size_t>(r) * slot_elements};
    sum_table = detail::add_table({&sum, 1}, {dtype::f32, wt, dev + l.results}, rows, at, l.table_rows);
    tensors.clear();
    for (int p = 0; p < n; ++p) tensors.push_back({out + l.at(p).first, l.at(p).size, static_cast<std::size_t>(p) * slot_elements});
    decode_table = detail::add_table(tensors, {dtype::f32, wt, dev + l.results}, rows, at, l.table_rows);
  }

  // 1. Encode every contribution once; the owner's own one, scaled, into the accumulator.
  tr.enqueue(what, c.until(), [&](ncclComm_t, cudaStream_t s) {
    TUTTI_NCCL_CHECK(r, what, cuda::upload_table({rows, at}, table_dev, s));
    TUTTI_NCCL_CHECK(r, what, (cuda::pack<float, float>(table_dev + own_table.first, own_table.rows, acc, self, nullptr, s)));
    if constexpr (sixteen) {
      using W = typename wire_element<Codec>::type;
      TUTTI_NCCL_CHECK(r, what, (cuda::pack<float, W>(table_dev + encode_table.first, encode_table.rows,
                                                      reinterpret_cast<detail::wire_t<W>*>(dev + l.outgoing), self, nullptr, s)));
    } else {
      for (int p = 0; p < n; ++p)
        if (p != r && l.at(p).size)
          TUTTI_NCCL_CHECK(r, what, cuda::int8_quantise(in + l.at(p).first, l.at(p).size, self, slot(l.outgoing, p), s));
    }
  });
  // 2. Each encoding to its segment's owner: one group of sends and receives.
  if (n > 1) {
    const auto messages = phase1_messages(l, r, wire);
    std::vector<transport::nccl::p2p_op> ops;
    ops.reserve(messages.size());
    for (const message& m : messages) ops.push_back({m.is_send, m.peer, dev + m.offset, m.bytes});
    tr.post(ops, what, c.until());
  }
  // 3. The owner sums in fp32, encodes the sum once; every owner's encoded sum to every rank.
  tr.enqueue(what, c.until(), [&](ncclComm_t comm, cudaStream_t s) {
    if (mine.size) {
      for (int step = 1; step < n; ++step) {
        const int p = contributor(r, step, n);
        if constexpr (sixteen) {
          const dtype wt = std::is_same_v<typename wire_element<Codec>::type, half> ? dtype::f16 : dtype::bf16;
          TUTTI_NCCL_CHECK(r, what, cuda::decode_reduce(wt, slot(l.contributions, p), acc, mine.size, s));
        } else {
          TUTTI_NCCL_CHECK(r, what, cuda::int8_dequantise(slot(l.contributions, p), mine.size, acc, true, s));
        }
      }
      if constexpr (sixteen) {
        using W = typename wire_element<Codec>::type;
        TUTTI_NCCL_CHECK(r, what, (cuda::pack<float, W>(table_dev + sum_table.first, sum_table.rows,
                                                        reinterpret_cast<detail::wire_t<W>*>(dev + l.results), 1.0f, nullptr, s)));
      } else {
        TUTTI_NCCL_CHECK(r, what, cuda::int8_quantise(acc, mine.size, 1.0f, slot(l.results, r), s));
      }
    }
    if (n > 1)
      TUTTI_NCCL_CHECK(r, what, ncclAllGather(slot(l.results, r), dev + l.results, l.slot, ncclUint8, comm, s));
  });
  // 4. Every rank decodes the same bytes.
  tr.enqueue(what, c.until(), [&](ncclComm_t, cudaStream_t s) {
    if constexpr (sixteen) {
      using W = typename wire_element<Codec>::type;
      TUTTI_NCCL_CHECK(r, what, (cuda::unpack<float, W>(table_dev + decode_table.first, decode_table.rows,
                                                        reinterpret_cast<const detail::wire_t<W>*>(dev + l.results), 1.0f, false, s)));
    } else {
      for (int p = 0; p < n; ++p)
        if (l.at(p).size)
          TUTTI_NCCL_CHECK(r, what, cuda::int8_dequantise(slot(l.results, p), l.at(p).size, out + l.at(p).first, false, s));
    }
  });
  tr.finish_on_stream(what, c.until());
}

//! out = unpack(NCCL's 16-bit sum of pack(in * scale)): algorithm::native_wire_sum's allreduce
//! (fp16 and bf16 only); count > 0, the ranks' arguments already agreed.
template <class Codec, class Ctx>
void wire_sum_allreduce(Ctx& c, const float* in, float* out, std::size_t count, float scale) {
  static_assert(wire_element<Codec>::sixteen_bit, "wire_sum_allreduce: a 16-bit codec (fp16, bf16) only");
  using W = typename wire_element<Codec>::type;
  const dtype wt = std::is_same_v<W, half> ? dtype::f16 : dtype::bf16;
  auto& tr = c.transport();
  const int n = c.size(), r = c.rank();
  const std::string& what = what_allreduce<Codec>();
  const wire_sum_layout l = make_wire_sum_layout(count);
  std::byte* dev = tr.device_scratch(l.total);
  auto* rows = reinterpret_cast<cuda::chunk*>(tr.host_scratch(l.table_rows * sizeof(cuda::chunk)));
  auto* table_dev = reinterpret_cast<cuda::chunk*>(dev + l.tables);
  auto* buffer = reinterpret_cast<detail::wire_t<W>*>(dev + l.buffer);
  std::size_t at = 0;
  const cuda::tensor_desc src{in, count, 0}, dst{out, count, 0};
  const auto pack_table = detail::add_table({&src, 1}, {dtype::f32, wt, buffer}, rows, at, l.table_rows);
  const auto unpack_table = detail::add_table({&dst, 1}, {dtype::f32, wt, buffer}, rows, at, l.table_rows);
  const float self = scale * c.prescale();
  tr.enqueue(what, c.until(), [&](ncclComm_t comm, cudaStream_t s) {
    TUTTI_NCCL_CHECK(r, what, cuda::upload_table({rows, at}, table_dev, s));
    TUTTI_NCCL_CHECK(r, what, (cuda::pack<float, W>(table_dev + pack_table.first, pack_table.rows, buffer, self, nullptr, s)));
    if (n > 1)
      TUTTI_NCCL_CHECK(r, what, ncclAllReduce(buffer, buffer, count, wire_element<Codec>::nccl, ncclSum, comm, s));
  });
  tr.enqueue(what, c.until(), [&](ncclComm_t, cudaStream_t s) {
    TUTTI_NCCL_CHECK(r, what, (cuda::unpack<float, W>(table_dev + unpack_table.first, unpack_table.rows, buffer, 1.0f, false, s)));
  });
  tr.finish_on_stream(what, c.until());
}

}  // namespace tutti::algorithm::native_codecs
