//! @file kernels_gpu_test.cu  Every kernel against the CPU reference executor, bit for bit (NaN as NaN), over random tensor lists; exit 77 without a GPU.
//!
//! Not doctest: one small program keeps nvcc's work down (all kernels are instantiated once, here).
//! Exit status: 0 all equal, 1 a mismatch or a CUDA error (printed), 77 no GPU ("SKIP: <reason>").
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda/tensor_lists.hpp"
#include "tutti/codec/int8.hpp"
#include "tutti/cuda/check.hpp"
#include "tutti/cuda/device.hpp"
#include "tutti/cuda/multi_tensor.cuh"
#include "tutti/cuda/multi_tensor.hpp"

namespace {

using tutti::dtype;
namespace tc = tutti::cuda;

int failures = 0;

void fail(const std::string& what) {
  if (++failures <= 20) std::printf("FAIL: %s\n", what.c_str());
}

//! Device memory, freed on scope exit.
struct device_bytes {
  void* p = nullptr;
  explicit device_bytes(std::size_t n) { TUTTI_CUDA_CHECK(cudaMalloc(&p, n + 32)); }  // 256-byte aligned
  ~device_bytes() { cudaFree(p); }
  device_bytes(const device_bytes&) = delete;
  device_bytes& operator=(const device_bytes&) = delete;
  device_bytes(device_bytes&& o) noexcept : p(o.p) { o.p = nullptr; }
  [[nodiscard]] unsigned char* at(std::size_t offset) const { return static_cast<unsigned char*>(p) + offset; }
};

bool is_nan(const unsigned char* e, dtype t) {
  if (t == dtype::f32) {
    float f;
    std::memcpy(&f, e, 4);
    return std::isnan(f);
  }
  std::uint16_t b;
  std::memcpy(&b, e, 2);
  return t == dtype::f16 ? (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0 : (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
}

//! Elements of type t that differ in their bytes, two NaNs matching (the GPU's arithmetic returns a
//! canonical NaN, the CPU's keeps a payload).
std::size_t mismatches(const unsigned char* a, const unsigned char* b, std::size_t n, dtype t) {
  const std::size_t size = tutti::size_of(t);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char *x = a + i * size, *y = b + i * size;
    if (std::memcmp(x, y, size) != 0 && !(is_nan(x, t) && is_nan(y, t))) ++bad;
  }
  return bad;
}

std::vector<unsigned char> to_host(const void* device, std::size_t bytes) {
  std::vector<unsigned char> h(bytes);
  if (bytes) TUTTI_CUDA_CHECK(cudaMemcpy(h.data(), device, bytes, cudaMemcpyDeviceToHost));
  return h;
}

//! One list through pack (with the flag) and unpack (plain or accumulating), GPU against CPU.
void check_list(std::mt19937_64& rng, dtype tt, dtype wt, const tutti_test::list_shape& shape, std::size_t chunk,
                const std::string& name) {
  const std::size_t tsize = tutti::size_of(tt), wsize = tutti::size_of(wt);
  tutti_test::host_list host(rng, shape, tsize, wsize);
  const float scale = rng() % 2 ? 1.0f : 0.3f;

  // The device mirror: the same misalignments, the same values, the same sentinel buffer.
  std::vector<device_bytes> tensors;
  std::vector<tc::tensor_desc> device_descs;
  for (std::size_t i = 0; i < shape.counts.size(); ++i) {
    tensors.emplace_back(shape.counts[i] * tsize);
    void* d = tensors.back().at(shape.misalign[i]);
    TUTTI_CUDA_CHECK(cudaMemcpy(d, host.tensors[i].data, shape.counts[i] * tsize, cudaMemcpyHostToDevice));
    device_descs.push_back({d, shape.counts[i], shape.offsets[i]});
  }
  const std::size_t buffer_bytes = shape.buffer_elements * wsize;
  device_bytes buffer(buffer_bytes);
  void* dbuf = buffer.at(shape.buffer_misalign);
  TUTTI_CUDA_CHECK(cudaMemset(dbuf, 0xa5, buffer_bytes));

  const tc::multi_tensor_layout host_layout{tt, wt, host.buffer, chunk};
  const tc::multi_tensor_layout device_layout{tt, wt, dbuf, chunk};
  const auto host_table = tc::make_table(host.tensors, host_layout);
  const auto device_table = tc::make_table(device_descs, device_layout);
  if (host_table.size() != device_table.size()) return fail(name + ": tables differ in length");
  for (std::size_t r = 0; r < host_table.size(); ++r)
    if (host_table[r].flags != device_table[r].flags) return fail(name + ": tables differ in vector flags");

  device_bytes table(device_table.size() * sizeof(tc::chunk));
  device_bytes flag(sizeof(int));
  cudaStream_t stream;
  TUTTI_CUDA_CHECK(cudaStreamCreate(&stream));
  TUTTI_CUDA_CHECK(cudaMemsetAsync(flag.p, 0, sizeof(int), stream));
  TUTTI_CUDA_CHECK(tc::upload_table(device_table, static_cast<tc::chunk*>(table.p), stream));
  TUTTI_CUDA_CHECK(tc::pack(device_layout, static_cast<tc::chunk*>(table.p), device_table.size(), scale,
                            static_cast<int*>(flag.p), stream));
  TUTTI_CUDA_CHECK(cudaStreamSynchronize(stream));
  int host_flag = 0;
  tc::reference::pack(host_layout, host_table, scale, &host_flag);
  const auto got = to_host(dbuf, buffer_bytes);
  if (const std::size_t bad = mismatches(got.data(), host.buffer_bytes().data(), shape.buffer_elements, wt))
    fail(name + ": pack, " + std::to_string(bad) + " elements differ");
  int gpu_flag = 0;
  TUTTI_CUDA_CHECK(cudaMemcpy(&gpu_flag, flag.p, sizeof(int), cudaMemcpyDeviceToHost));
  if (gpu_flag != host_flag) fail(name + ": non-finite flag " + std::to_string(gpu_flag) + ", CPU " + std::to_string(host_flag));

  // Unpack the packed buffer back, scaled, into the tensors (still holding their values).
  const bool accumulate = rng() % 2;
  TUTTI_CUDA_CHECK(tc::unpack(device_layout, static_cast<tc::chunk*>(table.p), device_table.size(), 0.5f, accumulate,
                              stream));
  TUTTI_CUDA_CHECK(cudaStreamSynchronize(stream));
  tc::reference::unpack(host_layout, host_table, 0.5f, accumulate);
  for (std::size_t i = 0; i < shape.counts.size(); ++i) {
    const auto t = to_host(device_descs[i].data, shape.counts[i] * tsize);
    if (const std::size_t bad =
            mismatches(t.data(), static_cast<const unsigned char*>(host.tensors[i].data), shape.counts[i], tt))
      fail(name + ": unpack" + (accumulate ? " (accumulate)" : "") + ", tensor " + std::to_string(i) + ", " +
           std::to_string(bad) + " elements differ");
  }
  TUTTI_CUDA_CHECK(cudaStreamDestroy(stream));
}

void check_decode_reduce(std::mt19937_64& rng, dtype wt, std::size_t n, std::size_t acc_misalign,
                         std::size_t wire_misalign) {
  std::vector<float> acc(n);
  std::vector<std::uint16_t> wire(n);
  tutti_test::fill_random(rng, acc.data(), 4, n);
  tutti_test::fill_random(rng, wire.data(), 2, n);
  device_bytes dacc(n * 4), dwire(n * 2);
  float* a = reinterpret_cast<float*>(dacc.at(acc_misalign));
  void* w = dwire.at(wire_misalign);
  TUTTI_CUDA_CHECK(cudaMemcpy(a, acc.data(), n * 4, cudaMemcpyHostToDevice));
  TUTTI_CUDA_CHECK(cudaMemcpy(w, wire.data(), n * 2, cudaMemcpyHostToDevice));
  TUTTI_CUDA_CHECK(tc::decode_reduce(wt, w, a, n, nullptr));
  TUTTI_CUDA_CHECK(cudaDeviceSynchronize());
  tc::reference::decode_reduce(wt, wire.data(), acc.data(), n);
  const auto got = to_host(a, n * 4);
  if (const std::size_t bad = mismatches(got.data(), reinterpret_cast<const unsigned char*>(acc.data()), n, dtype::f32))
    fail("decode_reduce " + std::string(tutti::name_of(wt)) + " n=" + std::to_string(n) + ": " + std::to_string(bad) +
         " elements differ");
}

void check_int8(std::mt19937_64& rng, std::size_t n, std::size_t in_misalign, std::size_t wire_misalign) {
  using codec = tutti::codec::int8;
  std::vector<float> in(n);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float magnitude = rng() % 4 == 0 ? 0x1p-124f : 1.0f;  // a quarter with subnormal block scales
  for (float& x : in) x = normal(rng) * magnitude;
  if (n > 600 && rng() % 2) in[n / 2] = std::numeric_limits<float>::quiet_NaN();
  const std::size_t bytes = codec::encoded_bytes(dtype::f32, n);
  device_bytes din(n * 4), dwire(bytes), dout(n * 4);
  float* i = reinterpret_cast<float*>(din.at(in_misalign));
  std::byte* w = reinterpret_cast<std::byte*>(dwire.at(wire_misalign));
  float* o = reinterpret_cast<float*>(dout.at(in_misalign));
  TUTTI_CUDA_CHECK(cudaMemcpy(i, in.data(), n * 4, cudaMemcpyHostToDevice));
  TUTTI_CUDA_CHECK(tc::int8_quantise(i, n, 0.5f, w, nullptr));
  std::vector<std::byte> wire(bytes);
  tc::reference::int8_quantise(in.data(), n, 0.5f, wire.data());
  const auto got = to_host(w, bytes);
  const std::string name = "int8 n=" + std::to_string(n) + " misalign " + std::to_string(in_misalign) + "/" +
                           std::to_string(wire_misalign);
  if (bytes && std::memcmp(got.data(), wire.data(), bytes) != 0) fail(name + ": quantised wire differs");
  for (bool accumulate : {false, true}) {
    std::vector<float> out = in;
    TUTTI_CUDA_CHECK(cudaMemcpy(o, out.data(), n * 4, cudaMemcpyHostToDevice));
    TUTTI_CUDA_CHECK(tc::int8_dequantise(w, n, o, accumulate, nullptr));
    tc::reference::int8_dequantise(wire.data(), n, out.data(), accumulate);
    const auto back = to_host(o, n * 4);
    if (const std::size_t bad = mismatches(back.data(), reinterpret_cast<const unsigned char*>(out.data()), n, dtype::f32))
      fail(name + (accumulate ? ": dequantise (accumulate), " : ": dequantise, ") + std::to_string(bad) + " elements differ");
  }
}

void run() {
  std::mt19937_64 rng(2026);
  const dtype types[] = {dtype::f32, dtype::f16, dtype::bf16};
  for (dtype tt : types)
    for (dtype wt : types)
      for (std::size_t chunk : {std::size_t{256}, tc::default_chunk_elements, std::size_t{1} << 16})
        for (int round = 0; round < 4; ++round) {
          const std::size_t tsize = tutti::size_of(tt), wsize = tutti::size_of(wt);
          const auto shape = tutti_test::random_shape(rng, 1 + rng() % 60, tsize, wsize, chunk, 4 * chunk);
          check_list(rng, tt, wt, shape, chunk,
                     std::string(tutti::name_of(tt)) + "->" + std::string(tutti::name_of(wt)) + " chunk " +
                         std::to_string(chunk) + " round " + std::to_string(round));
        }
  // One tensor of 2^24 + 3 elements beside a 1-element one and an empty one, at every element-legal
  // misalignment of the big tensor against an aligned buffer.
  for (std::size_t misalign : {0, 4, 8, 12}) {
    tutti_test::list_shape s;
    s.counts = {1, (std::size_t{1} << 24) + 3, 0};
    s.misalign = {0, misalign, 0};
    s.offsets = {0, 8, 8 + s.counts[1]};
    s.buffer_elements = s.counts[1] + 16;
    check_list(rng, dtype::f32, dtype::f16, s, tc::default_chunk_elements, "huge misalign " + std::to_string(misalign));
  }
  for (dtype wt : {dtype::f16, dtype::bf16}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{1021},
                          std::size_t{65536 + 5}})
      for (std::size_t am = 0; am < 16; am += 4)
        for (std::size_t wm = 0; wm < 16; wm += 2) check_decode_reduce(rng, wt, n, am, wm);
    check_decode_reduce(rng, wt, (std::size_t{1} << 24) + 3, 0, 0);
    check_decode_reduce(rng, wt, (std::size_t{1} << 24) + 3, 4, 2);
  }
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{255}, std::size_t{256}, std::size_t{257},
                        std::size_t{8191}, std::size_t{1} << 20})
    for (std::size_t im = 0; im < 16; im += 4)
      for (std::size_t wm = 0; wm < 8; ++wm) check_int8(rng, n, im, wm);
}

}  // namespace

int main() {
  const auto devices = tc::device_count();
  if (devices.count == 0) {
    std::printf("SKIP: %s\n", devices.reason.c_str());
    return 77;
  }
  try {
    run();
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  std::printf("%s: %d mismatches\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
