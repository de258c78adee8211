//! @file fusion_bench.cpp  tutti-fusion-bench: one training step's gradients of a real model, allreduced through the fusion engine.
//!
//! Reads a shape list (bench/fusion/MODEL.tsv: `name<TAB>shape<TAB>elements`, `#` lines are
//! comments), gives every tensor a float32 gradient, and per step enqueues them all, last layer
//! first (reverse file order, as a backward pass produces them), with allreduce_async(sum), then
//! waits for every handle. Each gradient is written just before it is enqueued (what the backward
//! pass does: one pass over its memory, timed) with small integers whose sum over ranks is exact in
//! float; after the timed steps every tensor is checked. A step's time runs from the first write to
//! the last wait's return on each rank; a step's number is the slowest rank's. Warm-up steps are not
//! timed. The autotuner's score (bytes per second of wall time) sees the same steps.
//!
//! The strategy is fusion::autotuned<> (fusion::threshold<> in a build without it); its parameters
//! come from TUTTI_FUSION_THRESHOLD, TUTTI_CYCLE_TIME, TUTTI_AUTOTUNE and TUTTI_AUTOTUNE_LOG, read
//! by tutti. TUTTI_AUTOTUNE defaults to 0 here: the tuner runs only when the driver asks for it.
//! Rank 0 prints one CSV line to stdout (columns in print_usage); everything else goes to stderr.
//! bench/fusion/run.sh runs it over strategies and models, bench/fusion/summarize.py reads the lines.
//!
//! --algorithm tuned runs algorithm::tuned<...> over the candidates tutti-tune measures for the
//! transport (tools/tutti_tune.cpp; its table: TUTTI_TUNING_FILE or the built-in default) instead of
//! automatic; with TUTTI_AUTOTUNE=1 the autotuner then also chooses which candidate runs the
//! engine's collectives (joint tuning, fusion/joint.hpp; TUTTI_AUTOTUNE_ALGORITHM=0 turns that off).
#include <tutti/tutti.hpp>
#include <tutti/algorithm/tuned_sets.hpp>
#if __has_include(<tutti/fusion/autotuned.hpp>) && defined(TUTTI_HAVE_EIGEN)
#include <tutti/fusion/autotuned.hpp>
#define TUTTI_FUSION_BENCH_AUTOTUNED 1
#endif

#include <getopt.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

namespace {

#if defined(TUTTI_FUSION_BENCH_AUTOTUNED)
using fusion_strategy = tutti::fusion::autotuned<>;
#else
using fusion_strategy = tutti::fusion::threshold<>;  // TUTTI_AUTOTUNE=1 is refused by the communicator
#endif

using clock_type = std::chrono::steady_clock;

struct usage_error {
  std::string what;
};

enum class transport_kind { shm, multi_node };
enum class algorithm_kind { automatic, tuned };

namespace alg = tutti::algorithm;
//! tutti-tune's candidates per transport (algorithm/tuned_sets.hpp): the names its tables may hold.
using shm_tuned = alg::tuned_on_one_host;
using multi_node_tuned = alg::tuned_across_hosts;

struct options {
  std::string model;  //!< path of the shape list
  int steps = 20;
  int warmup = 5;
  std::string label = "bench";
  double compute_ms = 0;  //!< sleep between steps, imitating forward and backward
  transport_kind transport = transport_kind::shm;
  algorithm_kind algorithm = algorithm_kind::automatic;
};

void print_usage(std::FILE* f) {
  std::fprintf(
      f,
      "usage: tutti-run -n N [--no-prefix] -- tutti-fusion-bench --model FILE.tsv [options]\n"
      "Replays one training step's gradients of a model (FILE.tsv: name<TAB>shape<TAB>elements per\n"
      "line, '#' lines are comments; bench/fusion/shapes.py writes them) through allreduce_async(sum):\n"
      "every tensor enqueued in reverse file order, then every handle waited on.\n"
      "  --model FILE        the shape list (required)\n"
      "  --steps N           timed steps (default 20)\n"
      "  --warmup N          untimed steps first (default 5)\n"
      "  --label NAME        the first column of the output line, no commas (default bench)\n"
      "  --compute-ms X      sleep X ms before each step, imitating compute (default 0)\n"
      "  --transport T       shm: the ranks share one host (default); multi_node: shm inside a host,\n"
      "                      UCX between hosts (builds with UCX and OpenSSL)\n"
      "  --algorithm A       automatic (default), or tuned: algorithm::tuned<...> over tutti-tune's\n"
      "                      candidates for the transport, reading TUTTI_TUNING_FILE; with\n"
      "                      TUTTI_AUTOTUNE=1 the autotuner chooses the engine's algorithm too\n"
      "                      (TUTTI_AUTOTUNE_ALGORITHM=0: not)\n"
      "  -h, --help          this text\n"
      "Environment (read by tutti; every rank must agree): TUTTI_FUSION_THRESHOLD (bytes, K/M/G\n"
      "suffixes), TUTTI_CYCLE_TIME (ms), TUTTI_AUTOTUNE (0/1; default 0 here), TUTTI_AUTOTUNE_LOG.\n"
      "Output: rank 0 prints one line to stdout,\n"
      "  fusion,label,model,ranks,threshold_bytes,cycle_us,autotune,steps,median_step_ms,p10_step_ms,\n"
      "  p90_step_ms,bytes_per_step,tensors\n"
      "with the strategy as configured at the start and a step's time as the slowest rank's, first\n"
      "gradient written to last wait; everything else goes to stderr.\n"
      "Exit status: 0 ok, 1 wrong results or a failed rank, 2 bad usage or a malformed shape list.\n");
}

long long parse_integer(std::string_view flag, std::string_view s, long long lo, long long hi) {
  long long n = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size())
    throw usage_error{std::string(flag) + " '" + std::string(s) + "': not an integer"};
  if (n < lo || n > hi)
    throw usage_error{std::string(flag) + " " + std::string(s) + ": must be in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]"};
  return n;
}

options parse(int argc, char** argv) {
  enum : int { opt_model = 256, opt_steps, opt_warmup, opt_label, opt_compute_ms, opt_transport, opt_algorithm };
  static const ::option long_options[] = {{"model", required_argument, nullptr, opt_model},
                                          {"steps", required_argument, nullptr, opt_steps},
                                          {"warmup", required_argument, nullptr, opt_warmup},
                                          {"label", required_argument, nullptr, opt_label},
                                          {"compute-ms", required_argument, nullptr, opt_compute_ms},
                                          {"transport", required_argument, nullptr, opt_transport},
                                          {"algorithm", required_argument, nullptr, opt_algorithm},
                                          {"help", no_argument, nullptr, 'h'},
                                          {nullptr, 0, nullptr, 0}};
  options o;
  opterr = 0;  // our own messages
  for (int c; (c = getopt_long(argc, argv, ":h", long_options, nullptr)) != -1;) {
    const std::string_view arg = optarg ? optarg : "";
    switch (c) {
      case opt_model: o.model = arg; break;
      case opt_steps: o.steps = static_cast<int>(parse_integer("--steps", arg, 1, 1 << 20)); break;
      case opt_warmup: o.warmup = static_cast<int>(parse_integer("--warmup", arg, 0, 1 << 20)); break;
      case opt_label:
        if (arg.empty() || arg.find_first_of(",\n\r\t ") != std::string_view::npos)
          throw usage_error{"--label '" + std::string(arg) + "': must be non-empty, without commas or white space"};
        o.label = arg;
        break;
      case opt_compute_ms: {
        char* end = nullptr;
        o.compute_ms = std::strtod(optarg, &end);
        if (arg.empty() || end != optarg + arg.size() || !(o.compute_ms >= 0) || o.compute_ms > 60000)
          throw usage_error{"--compute-ms '" + std::string(arg) + "': must be a number of milliseconds in [0, 60000]"};
        break;
      }
      case opt_transport:
        if (arg == "shm") o.transport = transport_kind::shm;
        else if (arg == "multi_node") o.transport = transport_kind::multi_node;
        else throw usage_error{"--transport '" + std::string(arg) + "': unknown transport (one of shm, multi_node)"};
        break;
      case opt_algorithm:
        if (arg == "automatic") o.algorithm = algorithm_kind::automatic;
        else if (arg == "tuned") o.algorithm = algorithm_kind::tuned;
        else throw usage_error{"--algorithm '" + std::string(arg) + "': unknown algorithm (automatic or tuned)"};
        break;
      case 'h': print_usage(stdout); std::exit(0);
      case ':': throw usage_error{std::string(argv[optind - 1]) + " needs a value"};
      default:
        throw usage_error{"unknown option " + (optopt > 0 && optopt < 256 ? "-" + std::string(1, static_cast<char>(optopt))
                                                                          : std::string(argv[optind - 1]))};
    }
  }
  if (optind < argc) throw usage_error{"unexpected argument '" + std::string(argv[optind]) + "'"};
  if (o.model.empty()) throw usage_error{"--model FILE.tsv is required (e.g. --model bench/fusion/resnet50.tsv)"};
  return o;
}

// ---- the shape list --------------------------------------------------------------------------------

struct tensor_spec {
  std::string name;
  std::size_t elements = 0;
};

struct model {
  std::string name;  //!< the file's stem: resnet50
  std::vector<tensor_spec> tensors;
  std::size_t bytes = 0;  //!< float32 bytes of all tensors: one step's traffic per rank
};

//! A positive integer that is all of `s`, or 0.
std::size_t positive(std::string_view s) {
  std::size_t n = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  return (s.empty() || ec != std::errc{} || p != s.data() + s.size()) ? 0 : n;
}

model read_model(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw usage_error{path + ": cannot open the shape list (" + std::strerror(errno) + ")"};
  model m;
  m.name = std::filesystem::path(path).stem().string();
  if (m.name.empty() || m.name.find_first_of(",\n\r\t ") != std::string::npos)
    throw usage_error{path + ": the file's stem '" + m.name + "' names the model in the CSV: it must be non-empty, "
                      "without commas or white space"};
  std::unordered_set<std::string> seen;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    const auto where = path + ":" + std::to_string(number) + ": ";
    std::vector<std::string_view> fields;
    for (std::string_view rest = line;;) {
      const auto tab = rest.find('\t');
      fields.push_back(rest.substr(0, tab));
      if (tab == std::string_view::npos) break;
      rest.remove_prefix(tab + 1);
    }
    if (fields.size() != 3)
      throw usage_error{where + "expected 3 tab-separated columns (name, shape, elements), got " +
                        std::to_string(fields.size()) + ": '" + line + "'"};
    const std::string_view name = fields[0], shape = fields[1], count = fields[2];
    if (name.empty() || name.find_first_of(" ,") != std::string_view::npos)
      throw usage_error{where + "the tensor name '" + std::string(name) + "' is empty or holds a space or comma"};
    if (!seen.insert(std::string(name)).second)
      throw usage_error{where + "the tensor name '" + std::string(name) + "' appears twice"};
    const std::size_t elements = positive(count);
    if (elements == 0 || elements > (std::size_t{1} << 34))
      throw usage_error{where + "elements '" + std::string(count) + "' is not a positive integer up to 2^34"};
    // The shape must agree with the count ("" is a scalar); a mismatch means a mangled file.
    std::size_t product = 1;
    for (std::string_view rest = shape; !shape.empty();) {
      const auto x = rest.find('x');
      const std::size_t dim = positive(rest.substr(0, x));
      if (dim == 0)
        throw usage_error{where + "shape '" + std::string(shape) + "' is not positive integers joined by 'x' (like 64x3x7x7)"};
      if (product > elements / dim)
        throw usage_error{where + "shape '" + std::string(shape) + "' has more elements than the third column's " +
                          std::to_string(elements)};
      product *= dim;
      if (x == std::string_view::npos) break;
      rest.remove_prefix(x + 1);
    }
    if (product != elements)
      throw usage_error{where + "shape '" + std::string(shape) + "' has " + std::to_string(product) +
                        " elements, the third column says " + std::to_string(elements)};
    m.tensors.push_back({std::string(name), elements});
    m.bytes += elements * sizeof(float);
  }
  if (in.bad()) throw usage_error{path + ": read error"};
  if (m.tensors.empty()) throw usage_error{path + ": no tensors (every line is empty or a '#' comment)"};
  return m;
}

// ---- the gradients ---------------------------------------------------------------------------------

//! Values repeat every `period` elements; 7 * tensor shifts the pattern per tensor, so a fused
//! buffer unpacked at a wrong offset, or into the wrong tensor, shows.
constexpr std::size_t period = 13;

//! Rank r's gradient element j of tensor t: (r + 1) * (1 + (7t + j) % 13). The sum over R ranks is
//! R(R+1)/2 * (1 + (7t + j) % 13), an integer below 2^24 (exact in float) for R up to 1000.
//! Written as the backward pass would before each step: a short head by hand, then doubling memcpy.
void fill(std::vector<float>& g, std::size_t tensor, int rank) {
  const std::size_t n = g.size();
  const std::size_t head = std::min(n, period * 64);
  std::size_t k = (7 * tensor) % period;
  for (std::size_t j = 0; j < head; ++j) {
    g[j] = static_cast<float>((rank + 1) * static_cast<int>(1 + k));
    if (++k == period) k = 0;
  }
  for (std::size_t done = head; done < n;) {  // done stays a multiple of the period
    const std::size_t c = std::min(done, n - done);
    std::memcpy(g.data() + done, g.data(), c * sizeof(float));
    done += c;
  }
}

//! Elements of tensor `t` that differ from the exact sum; the first one is described in `first`.
std::size_t count_wrong(const std::vector<float>& g, std::size_t tensor, int ranks, std::string& first) {
  const double base = static_cast<double>(ranks) * (ranks + 1) / 2;
  std::size_t wrong = 0;
  std::size_t k = (7 * tensor) % period;
  for (std::size_t j = 0; j < g.size(); ++j) {
    const double expected = base * static_cast<double>(1 + k);
    if (static_cast<double>(g[j]) != expected) {
      if (wrong++ == 0)
        first = "element " + std::to_string(j) + " is " + std::to_string(g[j]) + ", expected " + std::to_string(expected);
    }
    if (++k == period) k = 0;
  }
  return wrong;
}

//! The q-quantile of sorted values, interpolated linearly (numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  const double h = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

// ---- one rank's run -------------------------------------------------------------------------------

template <class Transport, class Algorithm>
int run(const options& o, const model& m) {
  using comm_t = tutti::communicator<Transport, Algorithm, fusion_strategy>;
  const tutti::rank_info info = tutti::rank_info_from_env();
  try {
    auto comm = comm_t::from_env();
    const int rank = comm.rank(), ranks = comm.size();
    const bool leader = rank == 0;
    // As configured at the start: the strategy under TUTTI_FUSION_THRESHOLD and TUTTI_CYCLE_TIME,
    // and TUTTI_AUTOTUNE as the communicator reads it (it refuses a bad value of any of them).
    const tutti::fusion::parameters initial = comm.fusion_parameters();
    const bool autotune = tutti::config::flag("TUTTI_AUTOTUNE", comm_t::fusion_type::autotune);
    if (leader)
      std::fprintf(stderr,
                   "tutti-fusion-bench: %s: %zu tensors, %zu bytes per step; %d ranks over %s, algorithm %s; "
                   "fusion::%s: threshold %zu bytes, cycle %lld us, autotune %d; %d warm-up + %d timed steps, "
                   "compute %g ms\n",
                   m.name.c_str(), m.tensors.size(), m.bytes, ranks, std::string(Transport::name).c_str(),
                   std::string(Algorithm::name).c_str(),
                   std::string(comm_t::fusion_type::name).c_str(), initial.threshold_bytes,
                   static_cast<long long>(initial.cycle_time.count()), autotune ? 1 : 0, o.warmup, o.steps,
                   o.compute_ms);

    const std::size_t n = m.tensors.size();
    std::vector<std::vector<float>> grads(n);
    for (std::size_t i = 0; i < n; ++i) grads[i].resize(m.tensors[i].elements);
    std::vector<tutti::fusion::handle> handles(n);
    std::vector<double> step_ms(static_cast<std::size_t>(o.steps) + 1, 0.0);  // + 1: wrong elements, below
    comm.start_fusion_engine();  // collective; its start is no step's time

    for (int s = 0; s < o.warmup + o.steps; ++s) {
      if (o.compute_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.compute_ms));
      const auto t0 = clock_type::now();
      for (std::size_t k = 0; k < n; ++k) {
        // Last layer first, each gradient written just before it is handed over, as a backward pass
        // produces them: the engine reduces earlier ones while later ones are being written.
        const std::size_t i = n - 1 - k;
        fill(grads[i], i, rank);
        handles[k] = comm.allreduce_async(m.tensors[i].name, grads[i], tutti::op::sum);
      }
      for (auto& h : handles) h.wait();
      const auto t1 = clock_type::now();
      if (s >= o.warmup)
        step_ms[static_cast<std::size_t>(s - o.warmup)] = std::chrono::duration<double, std::milli>(t1 - t0).count();
    }

    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::string first;
      if (const std::size_t w = count_wrong(grads[i], i, ranks, first)) {
        if (wrong == 0)
          std::fprintf(stderr, "tutti-fusion-bench: rank %d: tensor '%s' (%zu of %zu): %zu wrong elements; %s\n", rank,
                       m.tensors[i].name.c_str(), i, n, w, first.c_str());
        wrong += w;
      }
    }
    step_ms.back() = static_cast<double>(wrong);
    comm.allreduce(step_ms, tutti::op::max);  // each step's slowest rank, and the most wrong elements on a rank
    const auto most_wrong = static_cast<std::size_t>(step_ms.back());
    step_ms.pop_back();

    if (leader) {
      const tutti::fusion::parameters now = comm.fusion_parameters();
      std::fprintf(stderr, "tutti-fusion-bench: fusion parameters in force after the run: threshold %zu bytes, cycle %lld us, "
                           "algorithm choice %u (0: the algorithm's own; k: candidate k-1) (%llu negotiation rounds)\n",
                   now.threshold_bytes, static_cast<long long>(now.cycle_time.count()), now.algorithm,
                   static_cast<unsigned long long>(comm.fusion_rounds()));
      if (most_wrong) {
        std::fprintf(stderr, "tutti-fusion-bench: WRONG RESULTS: up to %zu elements differ from the exact sum on a rank "
                             "(each rank's first above); no fusion line printed\n", most_wrong);
      } else {
        std::vector<double> sorted = step_ms;
        std::sort(sorted.begin(), sorted.end());
        std::printf("fusion,%s,%s,%d,%zu,%lld,%d,%d,%.3f,%.3f,%.3f,%zu,%zu\n", o.label.c_str(), m.name.c_str(), ranks,
                    initial.threshold_bytes, static_cast<long long>(initial.cycle_time.count()), autotune ? 1 : 0,
                    o.steps, quantile(sorted, 0.5), quantile(sorted, 0.1), quantile(sorted, 0.9), m.bytes, n);
        std::fflush(stdout);
      }
    }
    // Nobody leaves before rank 0 has printed: the launcher stops the whole job as soon as one rank
    // exits non-zero (here: wrong results), which would cut rank 0 short.
    comm.barrier();
    return most_wrong ? 1 : 0;
  } catch (const tutti::invalid_argument& e) {  // a bad TUTTI_* variable, or TUTTI_AUTOTUNE=1 without autotuned
    std::fprintf(stderr, "tutti-fusion-bench: rank %d: error: %s\n", info.rank, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-fusion-bench: rank %d failed: %s\n", info.rank, e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // The autotuner runs only when the driver asks (TUTTI_AUTOTUNE=1), whatever the strategy's default.
  ::setenv("TUTTI_AUTOTUNE", "0", 0);
  try {
    const options o = parse(argc, argv);
    const model m = read_model(o.model);  // before the bootstrap, which waits for every rank
    if (o.transport == transport_kind::multi_node) {
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
      if (o.algorithm == algorithm_kind::tuned) return run<tutti::transport::multi_node, multi_node_tuned>(o, m);
      return run<tutti::transport::multi_node, alg::automatic>(o, m);
#else
      throw usage_error{"--transport multi_node: not built in (needs UCX and OpenSSL: tutti::ucx and tutti::net)"};
#endif
    }
    if (o.algorithm == algorithm_kind::tuned) return run<tutti::transport::shm, shm_tuned>(o, m);
    return run<tutti::transport::shm, alg::automatic>(o, m);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "tutti-fusion-bench: error: %s\n(tutti-fusion-bench --help lists the options)\n", e.what.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-fusion-bench: error: %s\n", e.what());
    return 1;
  }
}
