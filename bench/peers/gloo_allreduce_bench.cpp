//! @file gloo_allreduce_bench.cpp  The nccl-tests allreduce sweep through Gloo (Debian's libgloo-dev),
//! the peer PyTorch uses for CPU tensors; see PEERS.md (team notes) and compare.py.
//!
//! Same method and table as mpi_allreduce_bench.c and tutti-bench: float32 sum, out of place,
//! -w warm-up at the largest size then before each size, a barrier, -n timed iterations, time =
//! max over ranks of each rank's mean per iteration, busbw = algbw * 2(n-1)/n, then one untimed,
//! exactly checked iteration (#wrong).
//!
//! Transport: gloo::transport::tcp bound to 127.0.0.1 (loopback only), or to -H ADDR (this rank's
//! address on the network between hosts: bench/netns/run.sh gives each namespace's eth1). Rendezvous: a
//! gloo::rendezvous::FileStore in a directory shared by the ranks. Rank and world size come from
//! TUTTI_RANK/TUTTI_WORLD_SIZE or, so that `mpirun.openmpi -np 2` can start it, OMPI_COMM_WORLD_*.
//! The store directory is -s DIR, else $TUTTI_GLOO_STORE, else /tmp/gloo-allreduce-bench-<job>
//! with <job> from Open MPI's PMIX_NAMESPACE (unique per mpirun); it must not hold keys of an
//! earlier run, so a directory this program derived itself is removed at the end.
//!
//! Build: g++ -std=c++20 -O2 bench/peers/gloo_allreduce_bench.cpp -o gloo-allreduce-bench -lgloo -pthread
//! Run:   mpirun.openmpi -np 2 --bind-to none ./gloo-allreduce-bench -b 8 -e 256M
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// Rank r's element i is ((7i + 13r) mod 17) - 8: small integers, so float sums are exact in any
// order and the expected result depends only on i mod 17 (the same inputs as the other benches).
constexpr std::size_t period = 17;

float input_value(int rank, std::size_t i) {
  return static_cast<float>(static_cast<long>((i * 7 + static_cast<std::size_t>(rank) * 13) % period) - 8);
}

struct options {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{256} << 20;
  std::size_t step_factor = 2;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  std::string store_dir;
  std::string bind_address = "127.0.0.1";
};

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::size_t parse_bytes(const char* s) {
  char* end = nullptr;
  unsigned long long n = std::strtoull(s, &end, 10);
  if (end == s) throw usage_error(std::string("-b/-e '") + s + "': not a byte size (like 8, 512K, 64M, 1G)");
  switch (*end) {
    case 'K': case 'k': n <<= 10; ++end; break;
    case 'M': case 'm': n <<= 20; ++end; break;
    case 'G': case 'g': n <<= 30; ++end; break;
    default: break;
  }
  if (*end != '\0') throw usage_error(std::string("-b/-e '") + s + "': not a byte size (like 8, 512K, 64M, 1G)");
  return static_cast<std::size_t>(n);
}

int parse_int(const char* s, int lo, const char* flag) {
  char* end = nullptr;
  const long n = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || n < lo || n > (1L << 30))
    throw usage_error(std::string(flag) + " '" + s + "': expected an integer >= " + std::to_string(lo));
  return static_cast<int>(n);
}

options parse(int argc, char** argv) {
  options o;
  opterr = 0;
  for (int c; (c = getopt(argc, argv, "b:e:f:n:w:c:s:H:h")) != -1;) {
    switch (c) {
      case 'b': o.min_bytes = parse_bytes(optarg); break;
      case 'e': o.max_bytes = parse_bytes(optarg); break;
      case 'f': o.step_factor = static_cast<std::size_t>(parse_int(optarg, 2, "-f")); break;
      case 'n': o.iters = parse_int(optarg, 1, "-n"); break;
      case 'w': o.warmup = parse_int(optarg, 0, "-w"); break;
      case 'c': o.check = parse_int(optarg, 0, "-c") != 0; break;
      case 's': o.store_dir = optarg; break;
      case 'H': o.bind_address = optarg; break;
      case 'h':
        std::printf("usage: gloo-allreduce-bench [-b 8] [-e 256M] [-f 2] [-n 20] [-w 5] [-c 1] [-s STORE_DIR] [-H ADDR]\n"
                    "float32 sum allreduce over Gloo's TCP transport on 127.0.0.1 (or ADDR); rank 0 prints the\n"
                    "nccl-tests table. Ranks: TUTTI_RANK/TUTTI_WORLD_SIZE or OMPI_COMM_WORLD_RANK/SIZE.\n");
        std::exit(0);
      default: throw usage_error("unknown option or missing value (-h lists the options)");
    }
  }
  if (optind < argc) throw usage_error(std::string("unexpected argument '") + argv[optind] + "'");
  if (o.min_bytes < sizeof(float)) throw usage_error("-b: the smallest size must be at least 4 bytes (one float)");
  if (o.min_bytes > o.max_bytes) throw usage_error("-b is larger than -e");
  return o;
}

//! The first of the variables that is set, as an int; -1 if none is.
int env_int(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const char* v = std::getenv(name); v && *v) return std::atoi(v);
  return -1;
}

//! nccl-tests' getFloatStr(value, 7).
std::string format_time(double us) {
  int power = 0;
  for (double v = 1; us >= v; v *= 10) ++power;
  char out[32];
  if (power < 5) std::snprintf(out, sizeof out, "%7.2f", us);
  else if (power < 6) std::snprintf(out, sizeof out, "%7.1f", us);
  else if (power < 8) std::snprintf(out, sizeof out, "%7.0f", us);
  else std::snprintf(out, sizeof out, "%7.1e", us);
  return out;
}

struct free_delete {
  void operator()(float* p) const noexcept { std::free(p); }
};
using float_buffer = std::unique_ptr<float, free_delete>;

float_buffer allocate_touched(std::size_t bytes) {
  constexpr std::size_t page = 4096;
  const std::size_t rounded = (bytes + page - 1) / page * page + page;  // never 0
  float_buffer b(static_cast<float*>(std::aligned_alloc(page, rounded)));
  if (!b) throw std::bad_alloc();
  std::memset(b.get(), 0, rounded);  // first touch before any timing
  return b;
}

// gloo::sum and gloo::max are overloaded; these pick the (out, in1, in2, n) form Gloo calls.
using reduce_fn = void (*)(void*, const void*, const void*, std::size_t);

//! Allreduce of one double, for the per-row statistics (outside the timed loop).
double allreduce_scalar(const std::shared_ptr<gloo::Context>& ctx, double value, reduce_fn fn, std::uint32_t tag) {
  double out = 0;
  gloo::AllreduceOptions opts(ctx);
  opts.setInput(&value, 1);
  opts.setOutput(&out, 1);
  opts.setReduceFunction(fn);
  opts.setTag(tag);
  gloo::allreduce(opts);
  return out;
}

void barrier(const std::shared_ptr<gloo::Context>& ctx, std::uint32_t tag) {
  gloo::BarrierOptions opts(ctx);
  opts.setTag(tag);
  gloo::barrier(opts);
}

constexpr std::uint32_t tag_data = 1, tag_stats = 2, tag_barrier = 3;

int run(const options& o, int rank, int nranks) {
  // Rendezvous: every rank writes its TCP address into the file store and reads the others'.
  gloo::rendezvous::FileStore file_store(o.store_dir);
  gloo::rendezvous::PrefixStore store("gloo-allreduce-bench", file_store);
  gloo::transport::tcp::attr attr;
  attr.hostname = o.bind_address;  // 127.0.0.1 unless -H: no traffic leaves the host by default
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
  ctx->setTimeout(std::chrono::seconds(300));  // 256 MiB over TCP takes about 1 s; keep far away
  ctx->connectFullMesh(store, device);
  std::shared_ptr<gloo::Context> context = ctx;

  const std::size_t max_count = o.max_bytes / sizeof(float);
  float_buffer send = allocate_touched(max_count * sizeof(float));
  float_buffer recv = allocate_touched(max_count * sizeof(float));
  for (std::size_t i = 0; i < max_count; ++i) send.get()[i] = input_value(rank, i);
  float expected[period] = {};
  for (std::size_t m = 0; m < period; ++m)
    for (int r = 0; r < nranks; ++r) expected[m] += input_value(r, m);

  if (rank == 0) {
    std::printf("# gloo_allreduce_bench: Gloo %d.%d.%d (libgloo-dev), transport tcp %s (rank 0), gloo::allreduce\n",
                GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH, o.bind_address.c_str());
    std::printf("# nranks %d  dtype float  op sum  out-of-place  cpus %ld\n", nranks, sysconf(_SC_NPROCESSORS_ONLN));
    std::printf("# minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %d iters: %d validation: %d\n",
                o.min_bytes, o.max_bytes, o.step_factor, o.warmup, o.iters, o.check ? 1 : 0);
    std::printf("#\n# out-of-place\n");
    std::printf("#       size         count      type   redop    root     time   algbw   busbw #wrong\n");
    std::printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       \n");
    std::fflush(stdout);
  }

  // Options hold the buffer registrations; build them once per size, outside the timed loop,
  // as a framework that reuses its gradient buckets would.
  auto make_options = [&](std::size_t count) {
    gloo::AllreduceOptions opts(context);
    opts.setInput(send.get(), count);
    opts.setOutput(recv.get(), count);
    opts.setReduceFunction(static_cast<reduce_fn>(&gloo::sum<float>));
    opts.setTag(tag_data);
    return opts;
  };

  {
    const gloo::AllreduceOptions largest = make_options(max_count);
    for (int i = 0; i < o.warmup; ++i) gloo::allreduce(largest);
  }

  double total_wrong = 0, busbw_sum = 0;
  int rows = 0;
  for (std::size_t size = o.min_bytes;; size *= o.step_factor) {
    const std::size_t count = size / sizeof(float);
    const std::size_t bytes = count * sizeof(float);
    const gloo::AllreduceOptions opts = make_options(count);

    for (int i = 0; i < o.warmup; ++i) gloo::allreduce(opts);
    barrier(context, tag_barrier);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters; ++i) gloo::allreduce(opts);
    const double mean_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / o.iters;
    const double max_us = allreduce_scalar(context, mean_us, static_cast<reduce_fn>(&gloo::max<double>), tag_stats);

    double wrong = 0;
    if (o.check) {
      std::memset(recv.get(), 0xff, bytes);  // NaN: a result that was not written is counted
      gloo::allreduce(opts);
      std::size_t mine = 0;
      for (std::size_t i = 0, m = 0; i < count; ++i, m = m + 1 == period ? 0 : m + 1)
        mine += !(recv.get()[i] == expected[m]);
      wrong = allreduce_scalar(context, static_cast<double>(mine), static_cast<reduce_fn>(&gloo::sum<double>),
                               tag_stats);
    }

    if (rank == 0) {
      const double algbw = max_us > 0 ? static_cast<double>(bytes) / max_us / 1e3 : 0;  // GB/s
      const double busbw = algbw * 2.0 * (nranks - 1) / nranks;
      char wrong_str[32];
      if (o.check) std::snprintf(wrong_str, sizeof wrong_str, "%.0f", wrong);
      else std::snprintf(wrong_str, sizeof wrong_str, "N/A");
      std::printf("%12zu  %12zu  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %5s\n", bytes, count, "float", "sum", -1,
                  format_time(max_us).c_str(), algbw, busbw, wrong_str);
      std::fflush(stdout);
      busbw_sum += busbw;
      ++rows;
    }
    total_wrong += wrong;  // the same on every rank: it came from an allreduce
    if (size > o.max_bytes / o.step_factor) break;
  }

  if (rank == 0) {
    std::printf("# Out of bounds values : %.0f %s\n", total_wrong, total_wrong == 0 ? "OK" : "FAILED");
    std::printf("# Avg bus bandwidth : %g\n", rows ? busbw_sum / rows : 0.0);
    std::printf("#\n");
  }
  barrier(context, tag_barrier);  // every rank is past its last read of the store
  return total_wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    options o = parse(argc, argv);
    const int rank = env_int({"TUTTI_RANK", "OMPI_COMM_WORLD_RANK"});
    const int nranks = env_int({"TUTTI_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"});
    if (rank < 0 || nranks < 1 || rank >= nranks)
      throw usage_error("no rank: set TUTTI_RANK and TUTTI_WORLD_SIZE, or start under mpirun.openmpi -np N");

    bool derived_store = false;
    if (o.store_dir.empty()) {
      if (const char* dir = std::getenv("TUTTI_GLOO_STORE"); dir && *dir) {
        o.store_dir = dir;
      } else if (const char* job = std::getenv("PMIX_NAMESPACE"); job && *job) {
        o.store_dir = std::string("/tmp/gloo-allreduce-bench-") + job;
        derived_store = true;
      } else {
        throw usage_error("no rendezvous directory: give -s DIR or TUTTI_GLOO_STORE (the same on every rank)");
      }
    }
    std::filesystem::create_directories(o.store_dir);  // by every rank: whichever comes first

    const int status = run(o, rank, nranks);
    if (derived_store && rank == 0) std::filesystem::remove_all(o.store_dir);
    return status;
  } catch (const usage_error& e) {
    std::fprintf(stderr, "gloo_allreduce_bench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_allreduce_bench: error: %s\n", e.what());
    return 1;
  }
}
