//! @file native_allreduce_bench.cpp  tutti-cuda-native-bench: communicator<transport::nccl, algorithm::native>
//! allreduce over device buffers, in nccl-tests' table, so its busbw reads beside all_reduce_perf's.
//!
//! One thread per visible GPU, meeting in an inproc_store (tutti/testing/gpu_ranks.hpp, as the GPU tests);
//! float sum, out of place then in place, sizes -b, -b*f, ... up to -e (default 8 B to 256 MiB).
//! Time is what nccl-tests' default prints: each rank's *mean* time per collective over -n
//! iterations (host clock around the loop; every call returns only after its stream ran it), then
//! the mean over ranks (-a 1). busbw = algbw x 2(n-1)/n. #wrong: one more, untimed call on freshly
//! uploaded integer-valued floats ((rank + i) mod 7, so every sum is exact), copied back and
//! compared element by element; the output buffer is first filled with NaN so a call that writes
//! nothing cannot pass. The rows, the column header and the footer are bench/support/table.hpp's,
//! the same code tutti-bench prints with.
//!
//! The figures include what tutti adds around ncclAllReduce: with TUTTI_CHECK=1 (the default)
//! native's cross-rank argument check, one small all-gather per call; TUTTI_CHECK=0 leaves
//! ncclAllReduce and the wait alone. With one GPU the world is one rank: NCCL copies within the
//! GPU and busbw is 0 by definition; the header says so.
//!
//! Without a GPU it prints "SKIP: <why>" and exits 77.
//!   tutti-cuda-native-bench [-b 8] [-e 256M] [-f 2] [-n 20] [-w 5] [-c 1] [--json FILE]
#include <cuda_runtime_api.h>
#include <getopt.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <tutti/algorithm/native.hpp>
#include <tutti/communicator.hpp>
#include <tutti/cuda/check.hpp>
#include <tutti/cuda/device.hpp>
#include <tutti/testing/gpu_ranks.hpp>
#include <tutti/transport/nccl.hpp>

#include "../support/heap_allocations.hpp"
#include "../support/options.hpp"
#include "../support/table.hpp"

namespace {

using comm_t = tutti::communicator<tutti::transport::nccl, tutti::algorithm::native>;

//! cudaMalloc'd floats for the whole sweep: allocated once, so no row measures an allocation.
struct device_floats {
  float* p = nullptr;
  explicit device_floats(std::size_t count) {
    void* v = nullptr;
    TUTTI_CUDA_CHECK(cudaMalloc(&v, std::max<std::size_t>(count, 1) * sizeof(float)));
    p = static_cast<float*>(v);
  }
  ~device_floats() { cudaFree(p); }
  device_floats(const device_floats&) = delete;
  device_floats& operator=(const device_floats&) = delete;
};

struct run_options {
  bench::options table;  //!< what table.hpp reads: sizes, -n, -w, -c, ranks; allreduce, float, sum
  std::string json;      //!< --json FILE: the rows as JSON ("" for none)
};

void print_usage(std::FILE* f) {
  std::fprintf(f,
               "usage: tutti-cuda-native-bench [options]     (one thread per visible GPU; CUDA_VISIBLE_DEVICES picks them)\n"
               "  -b, --minbytes N        smallest message in bytes, K/M/G suffixes (default 8)\n"
               "  -e, --maxbytes N        largest message in bytes (default 256M)\n"
               "  -f, --stepfactor N      multiply the size by N between rows (default 2)\n"
               "  -n, --iters N           timed iterations per size (default 20)\n"
               "  -w, --warmup_iters N    untimed iterations at the largest size first, then before each size (default 5)\n"
               "  -c, --check 0|1         one more, untimed call per size, counting wrong elements (default 1)\n"
               "  --json FILE             also write the rows as JSON\n"
               "  -h, --help\n"
               "environment: TUTTI_CHECK=0 drops native's cross-rank argument check (one small all-gather per call);\n"
               "TUTTI_TIMEOUT bounds every collective; NCCL_* as NCCL reads them.\n");
}

run_options parse(int argc, char** argv) {
  run_options o;
  o.table.max_bytes = std::size_t{256} << 20;
  static const option longs[] = {{"minbytes", required_argument, nullptr, 'b'},
                                 {"maxbytes", required_argument, nullptr, 'e'},
                                 {"stepfactor", required_argument, nullptr, 'f'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"warmup_iters", required_argument, nullptr, 'w'},
                                 {"check", required_argument, nullptr, 'c'},
                                 {"json", required_argument, nullptr, 'J'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":b:e:f:n:w:c:h", longs, nullptr)) != -1;) {
    const std::string_view arg = optarg ? optarg : "";
    switch (c) {
      case 'b': o.table.min_bytes = bench::parse_bytes(c, arg); break;
      case 'e': o.table.max_bytes = bench::parse_bytes(c, arg); break;
      case 'f': o.table.step_factor = static_cast<std::size_t>(bench::parse_integer(c, arg, 2, 1 << 20)); break;
      case 'n': o.table.iters = static_cast<int>(bench::parse_integer(c, arg, 1, 1 << 30)); break;
      case 'w': o.table.warmup = static_cast<int>(bench::parse_integer(c, arg, 0, 1 << 30)); break;
      case 'c': o.table.check = bench::parse_bool(c, arg); break;
      case 'J': o.json = std::string(arg); break;
      case 'h': print_usage(stdout); std::exit(0);
      case ':': throw bench::usage_error{std::string(argv[optind - 1]) + ": needs a value"};
      default: throw bench::usage_error{std::string(argv[optind - 1]) + ": unknown option"};
    }
  }
  if (optind < argc) throw bench::usage_error{std::string("unexpected argument '") + argv[optind] + "'"};
  // Sizes are whole floats, as nccl-tests rounds them; a row of zero elements times nothing.
  if (o.table.min_bytes < sizeof(float)) throw bench::usage_error{"-b: at least 4 bytes (one float)"};
  if (o.table.max_bytes < o.table.min_bytes) throw bench::usage_error{"-e must be at least -b"};
  return o;
}

//! What every rank reports for one (size, mode), read by rank 0 between two barriers.
struct figures {
  double time_us = 0;
  double wrong = 0;
  double allocations = 0;
};

//! The sweep on one rank (one thread, one GPU). Rank 0 prints each row and keeps it for --json.
class rank_sweep {
 public:
  rank_sweep(comm_t& comm, int rank, const run_options& o, std::vector<figures>& shared, std::barrier<>& sync)
      : comm_(comm), r_(rank), n_(comm.size()), o_(o), shared_(shared), sync_(sync),
        max_count_(o.table.max_bytes / sizeof(float)), send_(max_count_), recv_(max_count_),
        input_(max_count_), got_(o.table.check ? max_count_ : 0) {
    for (std::size_t i = 0; i < max_count_; ++i) input_[i] = static_cast<float>((static_cast<std::size_t>(r_) + i) % 7);
    for (std::size_t k = 0; k < 7; ++k)
      for (int p = 0; p < n_; ++p) expected_[k] += static_cast<float>((static_cast<std::size_t>(p) + k) % 7);
    TUTTI_CUDA_CHECK(cudaMemcpy(send_.p, input_.data(), max_count_ * sizeof(float), cudaMemcpyHostToDevice));
    TUTTI_CUDA_CHECK(cudaMemcpy(recv_.p, input_.data(), max_count_ * sizeof(float), cudaMemcpyHostToDevice));
  }

  //! Runs every row; on rank 0 appends each to `rows` (bytes, count, out of place, in place).
  void run(const std::vector<std::size_t>& sizes, bench::summary& sum, std::vector<std::array<double, 8>>& rows) {
    // Like nccl-tests: warm up once at the largest size, so NCCL has made its connections and
    // tutti its scratch before the first row.
    const bench::row_shape largest = bench::shape_of(o_.table, sizes.back());
    for (int i = 0; i < o_.table.warmup; ++i) call(largest.count, false);
    for (std::size_t size : sizes) {
      const bench::row_shape s = bench::shape_of(o_.table, size);
      bench::row_result result[2];
      for (int mode = 0; mode < 2; ++mode) {
        const figures mine = time_mode(s.count, mode == 1);
        shared_[static_cast<std::size_t>(r_)] = mine;
        sync_.arrive_and_wait();
        for (const figures& f : shared_) {  // -a 1: the mean over ranks of each rank's mean
          result[mode].time_us += f.time_us / n_;
          result[mode].wrong += f.wrong;
          result[mode].allocations += f.allocations;
        }
        sync_.arrive_and_wait();  // nobody overwrites its slot before every rank has read it
      }
      if (r_ == 0) {
        bench::print_row(o_.table, s, result, 0, sum);
        rows.push_back({static_cast<double>(s.bytes), static_cast<double>(s.count), result[0].time_us, result[0].wrong,
                        result[1].time_us, result[1].wrong, result[0].allocations, result[1].allocations});
      } else {  // the same totals on every rank, for the exit status
        for (const auto& x : result) sum.wrong += x.wrong;
      }
    }
  }

 private:
  void call(std::size_t count, bool in_place) {
    if (in_place) comm_.allreduce(tutti::tensor_view(recv_.p, count, tutti::dtype::f32), tutti::op::sum);
    else
      comm_.allreduce(tutti::const_tensor_view(send_.p, count, tutti::dtype::f32),
                      tutti::tensor_view(recv_.p, count, tutti::dtype::f32), tutti::op::sum);
  }

  figures time_mode(std::size_t count, bool in_place) {
    for (int i = 0; i < o_.table.warmup; ++i) call(count, in_place);
    comm_.barrier();  // every rank starts its clock together, as nccl-tests' timed loop does
    const std::uint64_t allocs_before = heap_allocations;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o_.table.iters; ++i) call(count, in_place);
    const auto t1 = std::chrono::steady_clock::now();
    figures f;
    f.allocations = static_cast<double>(heap_allocations - allocs_before);
    f.time_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / o_.table.iters;
    if (o_.table.check) f.wrong = static_cast<double>(checked_call(count, in_place));
    return f;
  }

  //! Uploads the input afresh (in place, the timed calls have summed it over and over), fills the
  //! output with NaN (0xFF bytes), runs once and counts the elements that are not the exact sum.
  std::size_t checked_call(std::size_t count, bool in_place) {
    const std::size_t bytes = count * sizeof(float);
    TUTTI_CUDA_CHECK(cudaMemcpy(in_place ? recv_.p : send_.p, input_.data(), bytes, cudaMemcpyHostToDevice));
    if (!in_place) TUTTI_CUDA_CHECK(cudaMemset(recv_.p, 0xFF, bytes));
    TUTTI_CUDA_CHECK(cudaDeviceSynchronize());  // the transport's stream does not wait for these
    call(count, in_place);
    TUTTI_CUDA_CHECK(cudaMemcpy(got_.data(), recv_.p, bytes, cudaMemcpyDeviceToHost));
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) wrong += got_[i] == expected_[i % 7] ? 0 : 1;
    return wrong;
  }

  comm_t& comm_;
  int r_, n_;
  const run_options& o_;
  std::vector<figures>& shared_;
  std::barrier<>& sync_;
  std::size_t max_count_;
  device_floats send_, recv_;
  std::vector<float> input_;  //!< this rank's input, (rank + i) mod 7
  std::vector<float> got_;    //!< the checked call's output, copied back
  float expected_[7] = {};    //!< the sum over ranks depends on i mod 7 only
};

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "?";
  // NCCL_VERSION(X,Y,Z) is X*10000 + Y*100 + Z since 2.9.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

void write_json(const std::string& path, const run_options& o, int world, const std::vector<std::string>& gpus,
                const std::vector<std::array<double, 8>>& rows) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error("--json " + path + ": cannot open for writing");
  const double factor = bench::bus_factor(bench::collective_kind::allreduce, world);
  std::fprintf(f, "{\n  \"program\": \"tutti-cuda-native-bench\",\n  \"tutti\": \"%s\",\n  \"nccl\": \"%s\",\n",
               tutti::version, nccl_version().c_str());
  std::fprintf(f, "  \"communicator\": \"communicator<transport::nccl, algorithm::native>\",\n");
  std::fprintf(f, "  \"collective\": \"allreduce\",\n  \"dtype\": \"float\",\n  \"op\": \"sum\",\n  \"ranks\": %d,\n", world);
  std::fprintf(f, "  \"device\": %s,\n  \"devices\": [", json_string(gpus.front()).c_str());
  for (std::size_t i = 0; i < gpus.size(); ++i) std::fprintf(f, "%s%s", i ? ", " : "", json_string(gpus[i]).c_str());
  std::fprintf(f, "],\n  \"check\": %s,\n  \"iters\": %d,\n  \"warmup\": %d,\n",
               tutti::communicator_options::from_env().check ? "true" : "false", o.table.iters, o.table.warmup);
  std::fprintf(f, "  \"time\": \"mean over ranks of each rank's mean per collective (us)\",\n  \"rows\": [\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& x = rows[i];
    std::fprintf(f, "    {\"bytes\": %.0f, \"count\": %.0f", x[0], x[1]);
    for (int mode = 0; mode < 2; ++mode) {
      const double t = x[2 + 2 * mode], algbw = t > 0 ? x[0] / t / 1e3 : 0;
      std::fprintf(f, ", \"%s\": {\"time_us\": %.3f, \"algbw\": %.4f, \"busbw\": %.4f, \"wrong\": %.0f, \"allocations\": %.0f}",
                   mode ? "in_place" : "out_of_place", t, algbw, algbw * factor, x[3 + 2 * mode], x[6 + mode]);
    }
    std::fprintf(f, "}%s\n", i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
}

void print_header(const run_options& o, int world, const std::vector<std::string>& gpus) {
  const auto comm = tutti::communicator_options::from_env();
  std::printf("# tutti-cuda-native-bench: tutti %s, collective allreduce, communicator<transport::nccl, algorithm::native>, NCCL %s\n",
              tutti::version, nccl_version().c_str());
  std::printf("# ranks %d (threads, one GPU each)  dtype float  op sum\n", world);
  for (std::size_t d = 0; d < gpus.size(); ++d) std::printf("#   rank %zu: GPU %zu %s\n", d, d, gpus[d].c_str());
  if (world == 1)
    std::printf("# world of 1: one GPU visible, so each allreduce is a copy within it and busbw = algbw x 2(n-1)/n = 0;\n"
                "# run on a machine with several GPUs for a bus bandwidth\n");
  std::printf("# minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %d iters: %d agg iters: 1 validation: %d\n",
              o.table.min_bytes, o.table.max_bytes, o.table.step_factor, o.table.warmup, o.table.iters,
              o.table.check ? 1 : 0);
  std::printf("# time: the mean over ranks of each rank's mean time per collective over -n iterations (as nccl-tests -a 1);\n"
              "# host clock around blocking calls, each returning once its stream has run it\n");
  std::printf("# cross-rank check %s (TUTTI_CHECK): %s  timeout %.0f s\n", comm.check ? "on" : "off",
              comm.check ? "one small all-gather per call besides ncclAllReduce" : "ncclAllReduce alone",
              std::chrono::duration<double>(comm.timeout).count());
  std::printf("# buffers: cudaMalloc, one send and one receive of -e bytes per rank; inputs (rank + i) mod 7, sums exact\n");
  std::printf("#\n");
  bench::print_column_header(false);
}

}  // namespace

int main(int argc, char** argv) {
  run_options o;
  try {
    o = parse(argc, argv);
  } catch (const bench::usage_error& e) {
    std::fprintf(stderr, "tutti-cuda-native-bench: %s\n", e.what.c_str());
    print_usage(stderr);
    return 2;
  }
  const auto devices = tutti::cuda::device_count();
  if (devices.count == 0) {
    std::printf("SKIP: %s\n", devices.reason.c_str());
    return 77;
  }
  const int world = devices.count;
  o.table.ranks = world;  // table.hpp's busbw factor reads it
  std::vector<std::string> gpus;
  for (int d = 0; d < world; ++d) {
    cudaDeviceProp prop{};
    gpus.push_back(cudaGetDeviceProperties(&prop, d) == cudaSuccess ? prop.name : "?");
  }
  const std::vector<std::size_t> sizes = bench::sizes_of(o.table);
  print_header(o, world, gpus);

  std::vector<figures> shared(static_cast<std::size_t>(world));
  std::barrier<> sync(world);
  std::vector<bench::summary> sums(static_cast<std::size_t>(world));
  std::vector<std::array<double, 8>> rows;
  rows.reserve(sizes.size());
  const auto errors = tutti::testing::run_gpu_ranks<comm_t>(
      world, "native-bench",
      [&](comm_t& comm, int r) {
        rank_sweep sweep(comm, r, o, shared, sync);
        sweep.run(sizes, sums[static_cast<std::size_t>(r)], rows);
      },
      // Leave the rendezvous so the others are not held at it; their next collective then fails
      // (NCCL's error or TUTTI_TIMEOUT) and they leave too.
      [&](int) { sync.arrive_and_drop(); });

  bool failed = false;
  for (int r = 0; r < world; ++r)
    if (!errors[static_cast<std::size_t>(r)].empty()) {
      std::fprintf(stderr, "tutti-cuda-native-bench: rank %d: %s\n", r, errors[static_cast<std::size_t>(r)].c_str());
      failed = true;
    }
  if (errors[0].empty()) bench::print_footer(sums[0]);
  if (!o.json.empty() && errors[0].empty()) {
    try {
      write_json(o.json, o, world, gpus, rows);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tutti-cuda-native-bench: %s\n", e.what());
      failed = true;
    }
  }
  for (const auto& s : sums) failed = failed || s.wrong != 0;
  return failed ? 1 : 0;
}
