//! @file pack_bench.cu  tutti-cuda-pack-bench: one-launch multi-tensor pack/unpack against cudaMemcpy of the same bytes and against one launch per tensor (Horovod's approach), over a real model's gradient list.
//!
//!   tutti-cuda-pack-bench --shapes bench/fusion/resnet50.tsv [--wire half|bfloat16|float] [-n 20] [--json FILE]
//!
//! Rows, each the median of -n timed repetitions (cudaEvent around one repetition, after warm-up):
//!   memcpy        one cudaMemcpyAsync device-to-device of all fp32 gradient bytes (the ceiling: one
//!                 contiguous copy, no conversion);
//!   pack          tutti::cuda::pack: every tensor into the fusion buffer, times 1/8, in one launch;
//!   pack/tensor   the same kernel launched once per tensor (one-row tables), as Horovod does;
//!   unpack        tutti::cuda::unpack of the buffer back into the tensors, in one launch;
//!   unpack/tensor the same, one launch per tensor.
//! GB/s counts the bytes each row reads plus writes (memcpy: 2 x fp32 bytes; pack and unpack: fp32
//! bytes + wire bytes). Exit status 0, 1 on a CUDA error, 2 on bad usage, 77 without a GPU.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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
  std::string json;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "tutti-cuda-pack-bench: %s\nusage: tutti-cuda-pack-bench --shapes FILE.tsv "
                       "[--wire half|bfloat16|float] [-n SAMPLES] [--json FILE]\n", why);
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
    TUTTI_CUDA_CHECK(cudaMemset(grads[i], 0, counts[i] * sizeof(float)));
    tensors.push_back({grads[i], counts[i], offset});
    offset += counts[i];
  }
  void* buffer = nullptr;
  float* flat = nullptr;
  TUTTI_CUDA_CHECK(cudaMalloc(&buffer, total * wsize));
  TUTTI_CUDA_CHECK(cudaMalloc(&flat, total * sizeof(float)));
  const tc::multi_tensor_layout layout{tutti::dtype::f32, o.wire, buffer};
  const auto table = tc::make_table(tensors, layout);
  tc::chunk* device_table = nullptr;
  TUTTI_CUDA_CHECK(cudaMalloc(&device_table, table.size() * sizeof(tc::chunk)));
  cudaStream_t stream;
  TUTTI_CUDA_CHECK(cudaStreamCreate(&stream));
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

  int device = 0;
  cudaDeviceProp prop{};
  TUTTI_CUDA_CHECK(cudaGetDevice(&device));
  TUTTI_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("# %s, %zu tensors, %zu elements (%.1f MiB fp32), wire %s, table %zu chunks, %s\n", o.shapes.c_str(),
              counts.size(), total, fp32_bytes / (1 << 20), std::string(tutti::name_of(o.wire)).c_str(), table.size(),
              prop.name);
  std::printf("%-14s %10s %10s %10s\n", "op", "time(us)", "GB/s", "x memcpy");
  const double memcpy_ms = results.front().ms;
  for (const row& r : results)
    std::printf("%-14s %10.1f %10.1f %10.2f\n", r.name.c_str(), r.ms * 1e3, r.bytes / (r.ms * 1e-3) / 1e9,
                memcpy_ms / r.ms);
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << "{\"shapes\": \"" << o.shapes << "\", \"device\": \"" << prop.name << "\", \"wire\": \""
        << tutti::name_of(o.wire) << "\", \"tensors\": " << counts.size() << ", \"elements\": " << total
        << ", \"rows\": [";
    for (std::size_t i = 0; i < results.size(); ++i)
      out << (i ? ", " : "") << "{\"op\": \"" << results[i].name << "\", \"us\": " << results[i].ms * 1e3
          << ", \"gbps\": " << results[i].bytes / (results[i].ms * 1e-3) / 1e9 << "}";
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
