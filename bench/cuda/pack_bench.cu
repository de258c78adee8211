//! @file pack_bench.cu  tutti-cuda-pack-bench: one-launch multi-tensor pack/unpack against cudaMemcpy of the same bytes and against one launch per tensor (Horovod's approach), over a real model's gradient list.
//!
//!   tutti-cuda-pack-bench --shapes bench/fusion/resnet50.tsv [--wire half|bfloat16|float] [-n 20]
//!                         [--chunk ELEMENTS (default 65536)] [--json FILE]
//!
//! Rows, each the median of -n timed repetitions (cudaEvent around one repetition, after warm-up):
//!   memcpy        one cudaMemcpyAsync device-to-device of all fp32 gradient bytes (the ceiling: one
//!                 contiguous copy, no conversion);
//!   pack          tutti::cuda::pack: every tensor into the fusion buffer, times 1/8, in one launch;
//!   pack/tensor   the same kernel launched once per tensor (one-row tables), as Horovod does;
//!   unpack        tutti::cuda::unpack of the buffer back into the tensors, in one launch;
//!   unpack/tensor the same, one launch per tensor;
//!   decode_reduce tutti::cuda::decode_reduce of a 16-bit wire of all elements into an fp32
//!                 accumulator (acc += widen(wire)): the receive step of fp16/bf16 (16-bit wires only);
//!   int8_quantise tutti::cuda::int8_quantise of all fp32 elements into codec::int8's wire;
//!   int8_dequant  tutti::cuda::int8_dequantise of that wire back into fp32;
//!   peak copy     one cudaMemcpyAsync of 1 GiB device-to-device: the device memory's ceiling.
//! GB/s counts the bytes each row must read plus write (memcpy: 2 x fp32 bytes; pack and unpack:
//! fp32 bytes + wire bytes; decode_reduce: wire + 2 x fp32; int8: fp32 + the int8 wire).
//! Inputs are random finite values of every magnitude (never zeros, which hide unwritten outputs and
//! can run faster than real data). The goals of issue 24 are checked and printed last (and in the
//! JSON): pack and unpack >= 80 % of memcpy's GB/s and >= 5x faster than one launch per tensor,
//! decode_reduce and int8_quantise >= 70 % of the peak copy's GB/s. A missed goal is reported, not
//! an error: exit status 0, 1 on a CUDA error, 2 on bad usage, 77 without a GPU.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tutti/codec/int8.hpp"
#include "tutti/cuda/check.hpp"
#include "tutti/cuda/device.hpp"
#include "tutti/cuda/multi_tensor.cuh"
#include "tutti/cuda/multi_tensor.hpp"

namespace {

namespace tc = tutti::cuda;

struct options {
  std::string shapes;
  tutti::dtype wire = tutti::dtype::f16;
  int samples = 20;
  std::size_t chunk = tc::default_chunk_elements;
  std::string json;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "tutti-cuda-pack-bench: %s\nusage: tutti-cuda-pack-bench --shapes FILE.tsv "
                       "[--wire half|bfloat16|float] [-n SAMPLES] [--chunk ELEMENTS] [--json FILE]\n", why);
  std::exit(2);
}

//! bench/fusion/*.tsv: comment lines start with '#'; columns name, shape, elements (tab-separated).
std::vector<std::size_t> read_counts(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage(("cannot read " + path).c_str());
  std::vector<std::size_t> counts;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, shape, elements;
    std::getline(fields, name, '\t');
    std::getline(fields, shape, '\t');
    std::getline(fields, elements, '\t');
    if (elements == "elements") continue;  // a header line
    counts.push_back(std::stoull(elements));
  }
  if (counts.empty()) usage(("no tensors in " + path).c_str());
  return counts;
}

struct row {
  std::string name;
  double ms;
  double bytes;
  [[nodiscard]] double gbps() const { return bytes / (ms * 1e-3) / 1e9; }
};

//! Finite floats of every sign and of magnitudes 2^-20..2^11, from a hash of (seed, index).
__global__ void fill_random(float* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 0x9e3779b1u ^ seed ^ static_cast<std::uint32_t>(i >> 32) * 0x85ebca6bu;
    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    h *= 0x297a2d39u;
    h ^= h >> 15;
    const float mantissa = 1.0f + static_cast<float>(h & 0xffffu) / 65536.0f;
    p[i] = ((h >> 31) ? -mantissa : mantissa) * exp2f(static_cast<float>(static_cast<int>((h >> 16) % 32u) - 20));
  }
}

void random_floats(float* p, std::size_t n, std::uint32_t seed, cudaStream_t stream) {
  if (n == 0) return;
  fill_random<<<1024, 256, 0, stream>>>(p, n, seed);
  TUTTI_CUDA_CHECK(cudaGetLastError());
}

struct goal {
  std::string what;
  double value, target;
  [[nodiscard]] bool met() const { return value >= target; }
};

template <class F>
double median_ms(int samples, cudaStream_t stream, F&& run) {
  cudaEvent_t start, stop;
  TUTTI_CUDA_CHECK(cudaEventCreate(&start));
  TUTTI_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) run();  // warm-up
  std::vector<double> times;
  for (int i = 0; i < samples; ++i) {
    TUTTI_CUDA_CHECK(cudaEventRecord(start, stream));
    run();
    TUTTI_CUDA_CHECK(cudaEventRecord(stop, stream));
    TUTTI_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    TUTTI_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int run(const options& o) {
  const std::vector<std::size_t> counts = read_counts(o.shapes);
  const std::size_t wsize = tutti::size_of(o.wire);
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;

  // Each gradient its own allocation (as a framework's are), the fusion buffer one more.
  std::vector<float*> grads(counts.size());
  std::vector<tc::tensor_desc> tensors;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    TUTTI_CUDA_CHECK(cudaMalloc(&grads[i], counts[i] * sizeof(float)));
    tensors.push_back({grads[i], counts[i], offset});
    offset += counts[i];
  }
  void* buffer = nullptr;
  float* flat = nullptr;
  TUTTI_CUDA_CHECK(cudaMalloc(&buffer, total * wsize));
  TUTTI_CUDA_CHECK(cudaMalloc(&flat, total * sizeof(float)));
  const tc::multi_tensor_layout layout{tutti::dtype::f32, o.wire, buffer, o.chunk};
  const auto table = tc::make_table(tensors, layout);
  tc::chunk* device_table = nullptr;
  TUTTI_CUDA_CHECK(cudaMalloc(&device_table, table.size() * sizeof(tc::chunk)));
  cudaStream_t stream;
  TUTTI_CUDA_CHECK(cudaStreamCreate(&stream));
  for (std::size_t i = 0; i < counts.size(); ++i) random_floats(grads[i], counts[i], static_cast<std::uint32_t>(i), stream);
  TUTTI_CUDA_CHECK(tc::upload_table(table, device_table, stream));
  // One-row tables for the per-tensor launches: row i of the full table starts tensor i's rows.
  std::vector<std::size_t> first_row(counts.size()), rows(counts.size(), 0);
  for (std::size_t r = table.size(); r-- > 0;) {
    first_row[table[r].tensor] = r;
    ++rows[table[r].tensor];
  }
  const double fp32_bytes = static_cast<double>(total) * sizeof(float);
  const double wire_bytes = static_cast<double>(total) * static_cast<double>(wsize);
  const float scale = 0.125f;

  std::vector<row> results;
  float* flat_src = nullptr;
  TUTTI_CUDA_CHECK(cudaMalloc(&flat_src, total * sizeof(float)));
  random_floats(flat_src, total, 0x5eedu, stream);
  random_floats(flat, total, 0xacc0u, stream);
  results.push_back({"memcpy", median_ms(o.samples, stream, [&] {
                       TUTTI_CUDA_CHECK(cudaMemcpyAsync(flat, flat_src, total * sizeof(float),
                                                        cudaMemcpyDeviceToDevice, stream));
                     }), 2 * fp32_bytes});
  results.push_back({"pack", median_ms(o.samples, stream, [&] {
                       TUTTI_CUDA_CHECK(tc::pack(layout, device_table, table.size(), scale, nullptr, stream));
                     }), fp32_bytes + wire_bytes});
  results.push_back({"pack/tensor", median_ms(o.samples, stream, [&] {
                       for (std::size_t i = 0; i < counts.size(); ++i)
                         if (rows[i] != 0)
                           TUTTI_CUDA_CHECK(tc::pack(layout, device_table + first_row[i], rows[i], scale, nullptr, stream));
                     }), fp32_bytes + wire_bytes});
  results.push_back({"unpack", median_ms(o.samples, stream, [&] {
                       TUTTI_CUDA_CHECK(tc::unpack(layout, device_table, table.size(), 1.0f, false, stream));
                     }), fp32_bytes + wire_bytes});
  results.push_back({"unpack/tensor", median_ms(o.samples, stream, [&] {
                       for (std::size_t i = 0; i < counts.size(); ++i)
                         if (rows[i] != 0)
                           TUTTI_CUDA_CHECK(tc::unpack(layout, device_table + first_row[i], rows[i], 1.0f, false, stream));
                     }), fp32_bytes + wire_bytes});
  // The flat kernels over all elements: the packed buffer is a random 16-bit wire by now (pack of
  // random gradients), flat an fp32 accumulator; decode_reduce's sums stay finite over the repetitions.
  if (wsize == 2)
    results.push_back({"decode_reduce", median_ms(o.samples, stream, [&] {
                         TUTTI_CUDA_CHECK(tc::decode_reduce(o.wire, buffer, flat, total, stream));
                       }), wire_bytes + 2 * fp32_bytes});
  const std::size_t int8_bytes = tutti::codec::int8::encoded_bytes(tutti::dtype::f32, total);
  std::byte* int8_wire = nullptr;
  TUTTI_CUDA_CHECK(cudaMalloc(&int8_wire, int8_bytes));
  results.push_back({"int8_quantise", median_ms(o.samples, stream, [&] {
                       TUTTI_CUDA_CHECK(tc::int8_quantise(flat_src, total, scale, int8_wire, stream));
                     }), fp32_bytes + static_cast<double>(int8_bytes)});
  results.push_back({"int8_dequant", median_ms(o.samples, stream, [&] {
                       TUTTI_CUDA_CHECK(tc::int8_dequantise(int8_wire, total, flat, false, stream));
                     }), fp32_bytes + static_cast<double>(int8_bytes)});
  // The device memory's ceiling: a copy large enough that no cache holds it (1 GiB each way).
  constexpr std::size_t peak_bytes = std::size_t{1} << 30;
  void *peak_src = nullptr, *peak_dst = nullptr;
  TUTTI_CUDA_CHECK(cudaMalloc(&peak_src, peak_bytes));
  TUTTI_CUDA_CHECK(cudaMalloc(&peak_dst, peak_bytes));
  random_floats(static_cast<float*>(peak_src), peak_bytes / sizeof(float), 0xbeefu, stream);
  results.push_back({"peak copy", median_ms(o.samples, stream, [&] {
                       TUTTI_CUDA_CHECK(cudaMemcpyAsync(peak_dst, peak_src, peak_bytes, cudaMemcpyDeviceToDevice, stream));
                     }), 2.0 * peak_bytes});
  cudaFree(peak_src);
  cudaFree(peak_dst);
  cudaFree(int8_wire);
  const auto find = [&](const std::string& name) -> const row& {
    return *std::find_if(results.begin(), results.end(), [&](const row& r) { return r.name == name; });
  };
  const row &copy = find("memcpy"), &peak = find("peak copy");
  std::vector<goal> goals = {
      {"pack GB/s / memcpy GB/s", find("pack").gbps() / copy.gbps(), 0.8},
      {"unpack GB/s / memcpy GB/s", find("unpack").gbps() / copy.gbps(), 0.8},
      {"pack/tensor time / pack time", find("pack/tensor").ms / find("pack").ms, 5.0},
      {"unpack/tensor time / unpack time", find("unpack/tensor").ms / find("unpack").ms, 5.0},
      {"int8_quantise GB/s / peak copy GB/s", find("int8_quantise").gbps() / peak.gbps(), 0.7}};
  if (wsize == 2) goals.push_back({"decode_reduce GB/s / peak copy GB/s", find("decode_reduce").gbps() / peak.gbps(), 0.7});

  int device = 0;
  cudaDeviceProp prop{};
  TUTTI_CUDA_CHECK(cudaGetDevice(&device));
  TUTTI_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("# %s, %zu tensors, %zu elements (%.1f MiB fp32), wire %s, table %zu chunks of %zu, %s\n",
              o.shapes.c_str(), counts.size(), total, fp32_bytes / (1 << 20), std::string(tutti::name_of(o.wire)).c_str(),
              table.size(), o.chunk, prop.name);
  std::printf("%-14s %10s %10s %10s\n", "op", "time(us)", "GB/s", "x memcpy");
  for (const row& r : results)
    std::printf("%-14s %10.1f %10.1f %10.2f\n", r.name.c_str(), r.ms * 1e3, r.gbps(), r.gbps() / copy.gbps());
  for (const goal& g : goals)
    std::printf("goal %-38s %6.2f (>= %.2f) %s\n", g.what.c_str(), g.value, g.target, g.met() ? "met" : "MISSED");
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << "{\"shapes\": \"" << o.shapes << "\", \"device\": \"" << prop.name << "\", \"wire\": \""
        << tutti::name_of(o.wire) << "\", \"chunk_elements\": " << o.chunk << ", \"tensors\": " << counts.size() << ", \"elements\": " << total
        << ", \"rows\": [";
    for (std::size_t i = 0; i < results.size(); ++i)
      out << (i ? ", " : "") << "{\"op\": \"" << results[i].name << "\", \"us\": " << results[i].ms * 1e3
          << ", \"gbps\": " << results[i].gbps() << "}";
    out << "], \"goals\": [";
    for (std::size_t i = 0; i < goals.size(); ++i)
      out << (i ? ", " : "") << "{\"what\": \"" << goals[i].what << "\", \"value\": " << goals[i].value
          << ", \"target\": " << goals[i].target << ", \"met\": " << (goals[i].met() ? "true" : "false") << "}";
    out << "]}\n";
  }
  for (float* g : grads) cudaFree(g);
  cudaFree(buffer);
  cudaFree(flat);
  cudaFree(flat_src);
  cudaFree(device_table);
  cudaStreamDestroy(stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&] {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return std::string(argv[++i]);
    };
    if (a == "--shapes") o.shapes = value();
    else if (a == "--json") o.json = value();
    else if (a == "-n") o.samples = std::max(1, std::atoi(value().c_str()));
    else if (a == "--chunk") o.chunk = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--wire") {
      const std::string w = value();
      if (w == "half") o.wire = tutti::dtype::f16;
      else if (w == "bfloat16") o.wire = tutti::dtype::bf16;
      else if (w == "float") o.wire = tutti::dtype::f32;
      else usage(("unknown wire type " + w).c_str());
    } else if (a == "-h" || a == "--help") usage("help");
    else usage(("unknown option " + a).c_str());
  }
  if (o.shapes.empty()) usage("--shapes is required");
  const auto devices = tc::device_count();
  if (devices.count == 0) {
    std::printf("SKIP: %s\n", devices.reason.c_str());
    return 77;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-cuda-pack-bench: %s\n", e.what());
    return 1;
  }
}
