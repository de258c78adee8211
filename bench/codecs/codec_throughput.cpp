//! @file codec_throughput.cpp  tutti-codec-bench: encode, decode and decode_add throughput of each
//! lossy codec (fp16, bf16, int8) on one core, against memcpy of the same fp32 bytes.
//!
//! Users on a fast link pay this compute on every byte they send, so it is reported beside the link.
//! One thread, pinned to one CPU with sched_setaffinity (Linux; elsewhere unpinned, and the header
//! says so). Each row is the median over -n samples of the time per call, every sample at least
//! --min-ms long, after the calibration and -w warm-up samples, which are discarded. The table:
//!   GB/s fp32  = 4 * count / time: the fp32 bytes an op consumes (encode) or produces (decode,
//!                decode_add) per second, whatever the wire format;
//!   GB/s wire  = encoded_bytes(f32, count) / time;
//!   x memcpy   = memcpy time / op time at the same size (memcpy of the 4 * count fp32 bytes), so
//!                1.00 is as fast as copying the gradient and 0.25 four times slower;
//!   #wrong     = elements of one more, untimed call outside the codec's max_error (nccl-tests' -c).
//! Reading and running it: bench/codecs/README.md; a run and what limits each op:
//! bench/results/codecs-throughput-20261125.md.
//!
//! Build on its own:  g++ -std=c++20 -O3 -DNDEBUG -Iinclude bench/codecs/codec_throughput.cpp -o tutti-codec-bench
#include <tutti/codec/float16.hpp>
#include <tutti/codec/int8.hpp>

#include <getopt.h>
#include <unistd.h>
#if defined(__linux__)
#include <sched.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "../support/buffers.hpp"

#ifndef TUTTI_BENCH_CONFIG
#define TUTTI_BENCH_CONFIG "built outside CMake"  // CMake passes the build type ("Release", ...)
#endif

namespace {

using bench::buffer;

// ---- the codecs, type-erased: one row per (codec, op) ------------------------------------------

//! A lossy codec as plain function pointers, so that the timed loop calls the library's own
//! non-template loops exactly as an algorithm would, and the table is one loop over an array.
struct codec_entry {
  std::string_view name;
  void (*encode)(const float* in, std::size_t n, float scale, std::byte* wire) noexcept;
  void (*decode)(const std::byte* wire, std::size_t n, float* out) noexcept;
  void (*decode_add)(const std::byte* wire, std::size_t n, float* acc) noexcept;
  std::size_t (*encoded_bytes)(std::size_t n) noexcept;
  float (*max_error)(float y, float block_max) noexcept;
  std::size_t error_block;  //!< elements whose largest |y| is max_error's block_max (1: per element)
};

template <tutti::lossy_codec_policy C>
constexpr codec_entry entry_of() {
  std::size_t block = 1;
  if constexpr (requires { C::block_elements; }) block = C::block_elements;
  return {C::name,
          &C::encode,
          &C::decode,
          &C::decode_add,
          [](std::size_t n) noexcept -> std::size_t { return C::encoded_bytes(tutti::dtype::f32, n); },
          &C::max_error,
          block};
}

constexpr std::array<codec_entry, 3> codecs = {entry_of<tutti::codec::fp16>(), entry_of<tutti::codec::bf16>(),
                                               entry_of<tutti::codec::int8>()};

enum class op_kind { copy, encode, decode, decode_add };

constexpr std::string_view name_of(op_kind k) noexcept {
  switch (k) {
    case op_kind::copy: return "memcpy";
    case op_kind::encode: return "encode";
    case op_kind::decode: return "decode";
    case op_kind::decode_add: return "decode_add";
  }
  return "?";
}

// ---- options ------------------------------------------------------------------------------------

//! The four sizes the table shows by default: L1, L2, beyond L2, memory (fp32 input bytes).
constexpr std::array<std::size_t, 4> default_sizes = {std::size_t{4} << 10, std::size_t{256} << 10,
                                                      std::size_t{4} << 20, std::size_t{64} << 20};

struct options {
  std::size_t min_bytes = default_sizes.front();
  std::size_t max_bytes = default_sizes.back();
  std::size_t step_factor = 0;  //!< -f: a geometric sweep from -b to -e (0: the four default sizes in [-b, -e])
  int samples = 7;
  int warmup = 2;
  double min_sample_s = 0.020;
  bool check = true;
  float scale = 0.125f;  //!< encode's scale: avg over 8 ranks
  int cpu = -1;          //!< -1: the CPU the program starts on
  std::vector<const codec_entry*> selected;
  std::string json;
};

struct usage_error {
  std::string what;
};

void print_usage(std::FILE* f) {
  std::fprintf(f,
               "usage: tutti-codec-bench [options]\n"
               "Encode, decode and decode_add throughput of tutti's lossy codecs on one pinned core,\n"
               "with memcpy of the same fp32 bytes as the ceiling.\n"
               "  -b, --minbytes N     smallest fp32 input in bytes, K/M/G suffixes (default 4K)\n"
               "  -e, --maxbytes N     largest fp32 input in bytes (default 64M)\n"
               "  -f, --stepfactor N   sweep -b, -b*N, ... up to -e (default: only 4K 256K 4M 64M,\n"
               "                       those within [-b, -e]; if none is, -b and -e themselves)\n"
               "  -n, --samples N      timed samples per row; the row shows their median (default 7)\n"
               "  -w, --warmup N       discarded samples after calibration (default 2)\n"
               "      --min-ms T       each sample lasts at least T milliseconds (default 20)\n"
               "  -c, --check 0|1      check one more, untimed call of every row element by element (default 1)\n"
               "      --codec LIST     comma-separated: fp16,bf16,int8 (default all)\n"
               "      --scale S        encode's scale, as 1/world for avg (default 0.125)\n"
               "      --cpu K          pin to CPU K (default: the CPU it starts on)\n"
               "      --json FILE      also write the rows as JSON\n"
               "  -h, --help           this text\n"
               "Columns: GB/s fp32 = 4*count/time (the fp32 bytes consumed by encode, produced by decode\n"
               "and decode_add); GB/s wire = encoded bytes/time; x memcpy = memcpy time/op time at the\n"
               "same size; #wrong = elements of one more call outside the codec's max_error.\n"
               "Exit status: 0 ok, 1 wrong elements, 2 bad usage.\n");
}

enum long_only : int { opt_min_ms = 256, opt_codec, opt_scale, opt_cpu, opt_json };

std::string flag_name(int c) {
  switch (c) {
    case opt_min_ms: return "--min-ms";
    case opt_codec: return "--codec";
    case opt_scale: return "--scale";
    case opt_cpu: return "--cpu";
    case opt_json: return "--json";
    default: return std::string("-") + static_cast<char>(c);
  }
}

//! A byte count with an optional binary K/M/G suffix (as tutti-bench and nccl-tests read -b, -e).
std::size_t parse_bytes(int flag, std::string_view s) {
  std::size_t mult = 1;
  if (!s.empty() && std::string_view("KkMmGg").find(s.back()) != std::string_view::npos) {
    const char u = static_cast<char>(s.back() | 0x20);
    mult = std::size_t{1} << (u == 'k' ? 10 : u == 'm' ? 20 : 30);
    s.remove_suffix(1);
  }
  std::size_t n = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || n > std::numeric_limits<std::size_t>::max() / mult)
    throw usage_error{flag_name(flag) + " '" + std::string(s) + "': not a byte size (like 4K, 64M)"};
  return n * mult;
}

double parse_number(int flag, std::string_view s, double lo, double hi) {
  char* end = nullptr;
  const std::string str(s);
  const double v = std::strtod(str.c_str(), &end);
  if (str.empty() || *end != '\0' || !(v >= lo && v <= hi))
    throw usage_error{flag_name(flag) + " '" + str + "': must be a number in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]"};
  return v;
}

int parse_int(int flag, std::string_view s, int lo, int hi) {
  int v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v < lo || v > hi)
    throw usage_error{flag_name(flag) + " '" + std::string(s) + "': must be an integer in [" + std::to_string(lo) +
                      ", " + std::to_string(hi) + "]"};
  return v;
}

std::vector<const codec_entry*> parse_codecs(std::string_view list) {
  std::vector<const codec_entry*> out;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    const auto it = std::find_if(codecs.begin(), codecs.end(), [&](const codec_entry& c) { return c.name == name; });
    if (it == codecs.end()) throw usage_error{"--codec '" + std::string(name) + "': unknown codec (one of fp16, bf16, int8)"};
    if (std::find(out.begin(), out.end(), &*it) == out.end()) out.push_back(&*it);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  if (out.empty()) throw usage_error{"--codec: name at least one codec (fp16, bf16, int8)"};
  return out;
}

options parse(int argc, char** argv) {
  static const ::option long_options[] = {
      {"minbytes", required_argument, nullptr, 'b'}, {"maxbytes", required_argument, nullptr, 'e'},
      {"stepfactor", required_argument, nullptr, 'f'}, {"samples", required_argument, nullptr, 'n'},
      {"warmup", required_argument, nullptr, 'w'},   {"check", required_argument, nullptr, 'c'},
      {"min-ms", required_argument, nullptr, opt_min_ms}, {"codec", required_argument, nullptr, opt_codec},
      {"scale", required_argument, nullptr, opt_scale}, {"cpu", required_argument, nullptr, opt_cpu},
      {"json", required_argument, nullptr, opt_json}, {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  options o;
  opterr = 0;  // our own messages
  for (int c; (c = getopt_long(argc, argv, ":b:e:f:n:w:c:h", long_options, nullptr)) != -1;) {
    const std::string_view arg = optarg ? optarg : "";
    switch (c) {
      case 'b': o.min_bytes = parse_bytes(c, arg); break;
      case 'e': o.max_bytes = parse_bytes(c, arg); break;
      case 'f': o.step_factor = static_cast<std::size_t>(parse_int(c, arg, 2, 1 << 20)); break;
      case 'n': o.samples = parse_int(c, arg, 1, 1000); break;
      case 'w': o.warmup = parse_int(c, arg, 0, 1000); break;
      case 'c': o.check = parse_int(c, arg, 0, 1) == 1; break;
      case opt_min_ms: o.min_sample_s = parse_number(c, arg, 0.001, 10000) / 1e3; break;
      case opt_codec: o.selected = parse_codecs(arg); break;
      case opt_scale: o.scale = static_cast<float>(parse_number(c, arg, 0x1p-20, 1.0)); break;
      case opt_cpu: o.cpu = parse_int(c, arg, 0, 1 << 16); break;
      case opt_json: o.json = arg; break;
      case 'h': print_usage(stdout); std::exit(0);
      case ':': throw usage_error{flag_name(optopt ? optopt : '?') + " needs a value"};
      default: throw usage_error{"unknown option " + (optopt ? flag_name(optopt) : std::string(argv[optind - 1]))};
    }
  }
  if (optind < argc) throw usage_error{"unexpected argument '" + std::string(argv[optind]) + "'"};
  if (o.min_bytes < sizeof(float)) throw usage_error{"-b: the smallest size must hold one fp32 element (4 bytes)"};
  if (o.min_bytes > o.max_bytes)
    throw usage_error{"-b " + std::to_string(o.min_bytes) + " is larger than -e " + std::to_string(o.max_bytes)};
  if (o.selected.empty())
    for (const codec_entry& c : codecs) o.selected.push_back(&c);
  return o;
}

//! The rows' fp32 input sizes in bytes, each a whole number of elements.
std::vector<std::size_t> sizes_of(const options& o) {
  std::vector<std::size_t> sizes;
  if (o.step_factor) {
    for (std::size_t s = o.min_bytes;; s *= o.step_factor) {
      sizes.push_back(s);
      if (s > o.max_bytes / o.step_factor) break;
    }
  } else {
    for (std::size_t s : default_sizes)
      if (s >= o.min_bytes && s <= o.max_bytes) sizes.push_back(s);
    if (sizes.empty()) sizes = {o.min_bytes, o.max_bytes};
  }
  for (std::size_t& s : sizes) s -= s % sizeof(float);
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// ---- the machine --------------------------------------------------------------------------------

//! Pins this thread to one CPU; returns a sentence for the header.
std::string pin(int& cpu) {
#if defined(__linux__)
  if (cpu < 0) cpu = sched_getcpu();
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<unsigned>(cpu), &set);
    if (sched_setaffinity(0, sizeof set, &set) == 0) return "one thread pinned to CPU " + std::to_string(cpu) + " (sched_setaffinity)";
    return "one thread, NOT pinned (sched_setaffinity to CPU " + std::to_string(cpu) + ": " + std::strerror(errno) + ")";
  }
#endif
  return "one thread, NOT pinned (no sched_setaffinity on this platform)";
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string load_average() {
  double load[3] = {0, 0, 0};
#if defined(__linux__) || defined(__APPLE__)
  if (getloadavg(load, 3) == 3) {
    char s[64];
    std::snprintf(s, sizeof s, "%.2f %.2f %.2f", load[0], load[1], load[2]);
    return s;
  }
#endif
  return "unknown";
}

//! What the compiler was allowed to vectorise with: int8's loops and the portable fp16/bf16 ones
//! use no intrinsics, so this (not the CPU) decides their vector width. fp16/bf16 choose wider
//! loops at run time (float16_isa() below).
std::string vector_isa() {
  std::string s = "SSE2";
#if defined(__AVX512F__)
  s = "AVX-512F";
#elif defined(__AVX2__)
  s = "AVX2";
#elif defined(__AVX__)
  s = "AVX";
#elif defined(__SSE4_1__)
  s = "SSE4.1";
#elif !defined(__SSE2__)
  s = "no x86 SIMD";
#endif
#if defined(__F16C__)
  s += "+F16C";
#endif
  return s;
}

//! The fp16/bf16 loops this process runs (codec/float16_dispatch.hpp), what the CPU allows, and
//! TUTTI_CODEC_ISA, which caps them (portable: the loops of a baseline build).
std::string float16_isa() {
  const char* env = std::getenv("TUTTI_CODEC_ISA");
  return std::string(tutti::codec::name_of(tutti::codec::float16_active_isa())) + " (CPU runs " +
         std::string(tutti::codec::name_of(tutti::codec::float16_detail::cpu_isa())) + ", TUTTI_CODEC_ISA=" +
         (env && *env ? env : "unset") + ")";
}

// ---- input and checks ---------------------------------------------------------------------------

//! Gradient-like values: normal(0, 1) * 2^k with k uniform in [-20, 0], so exponents mix across
//! six decades, both signs, and one element in 32 an exact zero. Fixed seed.
void fill_gradient_like(float* x, std::size_t n) {
  std::mt19937_64 rng(20261125);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const bool zero = rng() % 32 == 0;
    x[i] = zero ? 0.0f : std::ldexp(normal(rng), exponent(rng));
  }
}

//! Elements of `out` further from x * scale than the codec's max_error (NaN and inf count).
std::size_t count_wrong(const codec_entry& c, const float* x, float scale, const float* out, std::size_t n) {
  std::size_t wrong = 0;
  for (std::size_t b = 0; b < n; b += c.error_block) {
    const std::size_t m = std::min(c.error_block, n - b);
    float top = 0;
    for (std::size_t j = 0; j < m; ++j) top = std::max(top, std::fabs(x[b + j] * scale));
    for (std::size_t j = 0; j < m; ++j) {
      const float y = x[b + j] * scale;  // as the codecs compute it
      if (!(std::fabs(out[b + j] - y) <= c.max_error(y, top))) ++wrong;
    }
  }
  return wrong;
}

// ---- timing -------------------------------------------------------------------------------------

//! Keeps the compiler from dropping or merging calls whose results it cannot see being read.
inline void clobber_memory() noexcept {
#if defined(__GNUC__)
  asm volatile("" : : : "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

struct timing {
  double median_s = 0;  //!< per call
  double best_s = 0;    //!< per call, the fastest sample (JSON only: on a busy machine the least disturbed)
  double spread = 0;    //!< (slowest - fastest sample) / median
  std::size_t calls_per_sample = 0;
};

//! Median time per call of `call`: calibrates calls per sample so a sample lasts at least
//! min_sample_s (the calibration runs are warm-up too), discards -w more samples, times -n.
template <class F>
timing time_calls(F&& call, const options& o) {
  using clock = std::chrono::steady_clock;
  const auto run = [&](std::size_t calls) {
    const auto t0 = clock::now();
    for (std::size_t k = 0; k < calls; ++k) {
      call();
      clobber_memory();
    }
    return std::chrono::duration<double>(clock::now() - t0).count();
  };
  std::size_t calls = 1;
  for (double t = run(calls); t < o.min_sample_s; t = run(calls)) {
    const double want = t > 0 ? static_cast<double>(calls) * o.min_sample_s * 1.2 / t : 100.0 * static_cast<double>(calls);
    calls = std::max(calls + 1, static_cast<std::size_t>(std::min(want, 100.0 * static_cast<double>(calls))));
  }
  for (int k = 0; k < o.warmup; ++k) (void)run(calls);
  std::vector<double> samples(static_cast<std::size_t>(o.samples));
  for (double& s : samples) s = run(calls) / static_cast<double>(calls);
  std::sort(samples.begin(), samples.end());
  const std::size_t h = samples.size() / 2;
  const double median = samples.size() % 2 ? samples[h] : (samples[h - 1] + samples[h]) / 2;
  return {median, samples.front(), (samples.back() - samples.front()) / median, calls};
}

// ---- the table ----------------------------------------------------------------------------------

struct row {
  std::string_view codec, op;
  std::size_t bytes, count, wire_bytes;
  timing t;
  double gbs_fp32, gbs_wire, x_memcpy;
  std::size_t wrong;
  bool checked;
};

void print_header(const options& o, const std::string& pinned) {
  std::printf("# tutti-codec-bench: encode/decode throughput of tutti's lossy codecs, %s\n", pinned.c_str());
  std::printf("# GB/s fp32 = 4 * count / time: the fp32 bytes encode consumes, decode and decode_add produce;\n");
  std::printf("# GB/s wire = encoded_bytes(f32, count) / time; x memcpy = memcpy time / op time at the same size\n");
  std::printf("# (memcpy of the same 4 * count fp32 bytes: 1.00 is as fast as a copy); time: per call, median of %d\n",
              o.samples);
  std::printf("# samples of >= %.0f ms each after calibration and %d warm-up samples; spread = (max - min) / median\n",
              o.min_sample_s * 1e3, o.warmup);
  std::printf("# input: gradient-like fp32 (normal * 2^k, k uniform in [-20, 0], 1/32 zeros, seed 20261125);\n");
  std::printf("# encode scale %g; decode_add accumulates into an fp32 buffer; #wrong: one more untimed call, every\n",
              static_cast<double>(o.scale));
  std::printf("# element against max_error (decode_add: exactly twice decode's value)%s\n", o.check ? "" : " -- DISABLED (-c 0)");
  std::printf("# cpu: %s, %u online; load average at start: %s\n", cpu_model().c_str(),
              static_cast<unsigned>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))), load_average().c_str());
  std::printf("# build: %s, compiler %s, vectorised for %s%s\n", TUTTI_BENCH_CONFIG,
#if defined(__VERSION__)
              __VERSION__,
#else
              "unknown",
#endif
              vector_isa().c_str(),
#if defined(__OPTIMIZE__)
              ""
#else
              " -- WARNING: built without optimisation, these numbers mean nothing"
#endif
  );
  std::printf("# fp16/bf16 loops chosen at run time: %s\n", float16_isa().c_str());
  std::printf("#\n");
  std::printf("#  codec  op                size        count   time(us)  GB/s fp32  GB/s wire  x memcpy  spread  #wrong\n");
  std::printf("#                            (B)   (elements)\n");
  std::fflush(stdout);
}

void format_time(char (&out)[32], double us) {  // nccl-tests' getFloatStr(value, 7), one digit wider
  if (us < 1e4) std::snprintf(out, sizeof out, "%8.2f", us);
  else if (us < 1e5) std::snprintf(out, sizeof out, "%8.1f", us);
  else std::snprintf(out, sizeof out, "%8.0f", us);
}

void print_row(const row& r) {
  char time[32], wrong[32];
  format_time(time, r.t.median_s * 1e6);
  if (r.checked) std::snprintf(wrong, sizeof wrong, "%zu", r.wrong);
  else std::snprintf(wrong, sizeof wrong, "N/A");
  std::printf("%8s  %-10s  %10zu  %11zu  %9s  %9.2f  %9.2f  %8.2f  %5.1f%%  %6s\n", std::string(r.codec).c_str(),
              std::string(r.op).c_str(), r.bytes, r.count, time, r.gbs_fp32, r.gbs_wire, r.x_memcpy, 100.0 * r.t.spread,
              wrong);
  std::fflush(stdout);
}

std::string json_escaped(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
  }
  return out;
}

void write_json(const options& o, const std::string& pinned, const std::vector<row>& rows) {
  std::FILE* f = std::fopen(o.json.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "tutti-codec-bench: --json %s: %s\n", o.json.c_str(), std::strerror(errno));
    return;
  }
  std::fprintf(f, "{\n  \"program\": \"tutti-codec-bench\",\n  \"cpu\": \"%s\",\n  \"pinning\": \"%s\",\n",
               json_escaped(cpu_model()).c_str(), json_escaped(pinned).c_str());
  std::fprintf(f, "  \"build\": \"%s\",\n  \"vector_isa\": \"%s\",\n  \"load_average_at_start\": \"%s\",\n",
               json_escaped(TUTTI_BENCH_CONFIG).c_str(), vector_isa().c_str(), load_average().c_str());
  std::fprintf(f, "  \"float16_isa\": \"%s\",\n", json_escaped(float16_isa()).c_str());
  std::fprintf(f, "  \"samples\": %d,\n  \"warmup\": %d,\n  \"min_sample_ms\": %g,\n  \"scale\": %g,\n", o.samples,
               o.warmup, o.min_sample_s * 1e3, static_cast<double>(o.scale));
  std::fprintf(f, "  \"gbs_fp32\": \"4 * count / median time per call\",\n  \"rows\": [\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const row& r = rows[i];
    std::fprintf(f,
                 "    {\"codec\": \"%s\", \"op\": \"%s\", \"bytes\": %zu, \"count\": %zu, \"wire_bytes\": %zu, "
                 "\"time_us\": %.4f, \"best_us\": %.4f, \"gbs_fp32\": %.4f, \"gbs_wire\": %.4f, \"x_memcpy\": %.4f, \"spread\": %.4f, "
                 "\"calls_per_sample\": %zu, \"wrong\": %s}%s\n",
                 std::string(r.codec).c_str(), std::string(r.op).c_str(), r.bytes, r.count, r.wire_bytes,
                 r.t.median_s * 1e6, r.t.best_s * 1e6, r.gbs_fp32, r.gbs_wire, r.x_memcpy, r.t.spread, r.t.calls_per_sample,
                 r.checked ? std::to_string(r.wrong).c_str() : "null", i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
}

// ---- the run ------------------------------------------------------------------------------------

int run(options& o) {
  const std::string pinned = pin(o.cpu);  // before the buffers are touched, so their pages are local
  const std::vector<std::size_t> sizes = sizes_of(o);
  const std::size_t max_count = sizes.back() / sizeof(float);
  std::size_t max_wire = 0;
  for (const codec_entry* c : o.selected) max_wire = std::max(max_wire, c->encoded_bytes(max_count));

  // Written once here (first touch), so no page fault is timed; smaller rows use their prefixes.
  const buffer x = buffer::heap(max_count * sizeof(float), 0);
  const buffer out = buffer::heap(max_count * sizeof(float), 0);
  const buffer acc = buffer::heap(max_count * sizeof(float), 0);
  const buffer wire = buffer::heap(max_wire, 0);
  auto* const xs = reinterpret_cast<float*>(x.get());
  auto* const outs = reinterpret_cast<float*>(out.get());
  auto* const accs = reinterpret_cast<float*>(acc.get());
  fill_gradient_like(xs, max_count);

  print_header(o, pinned);
  std::vector<row> rows;
  std::size_t total_wrong = 0;
  const float scale = o.scale;
  for (const std::size_t bytes : sizes) {
    const std::size_t n = bytes / sizeof(float);
    const timing copy = time_calls([&] { std::memcpy(outs, xs, bytes); }, o);
    row r{"-", name_of(op_kind::copy), bytes, n, bytes, copy, 0, 0, 1.0, 0, o.check};
    if (o.check) r.wrong = static_cast<std::size_t>(std::memcmp(outs, xs, bytes) != 0) * n;  // all or nothing
    r.gbs_fp32 = r.gbs_wire = static_cast<double>(bytes) / copy.median_s / 1e9;
    print_row(r);
    rows.push_back(r);
    total_wrong += r.wrong;

    for (const codec_entry* c : o.selected) {
      const std::size_t wire_bytes = c->encoded_bytes(n);
      c->encode(xs, n, scale, wire.get());  // decode's input, whatever rows run
      for (const op_kind k : {op_kind::encode, op_kind::decode, op_kind::decode_add}) {
        timing t;
        std::size_t wrong = 0;
        switch (k) {
          case op_kind::encode:
            t = time_calls([&] { c->encode(xs, n, scale, wire.get()); }, o);
            if (o.check) {
              c->decode(wire.get(), n, outs);
              wrong = count_wrong(*c, xs, scale, outs, n);
            }
            break;
          case op_kind::decode:
            t = time_calls([&] { c->decode(wire.get(), n, outs); }, o);
            if (o.check) wrong = count_wrong(*c, xs, scale, outs, n);
            break;
          case op_kind::decode_add:
            // acc grows by one decoded gradient per call: never NaN, never subnormal (decoded
            // values are 0 or normal), far from overflow in the calls one row makes.
            t = time_calls([&] { c->decode_add(wire.get(), n, accs); }, o);
            if (o.check) {  // onto decode's own result, decode_add must give exactly twice it
              c->decode(wire.get(), n, outs);
              std::memcpy(accs, outs, bytes);
              c->decode_add(wire.get(), n, accs);
              for (std::size_t i = 0; i < n; ++i) wrong += !(accs[i] == 2.0f * outs[i]);
            }
            break;
          case op_kind::copy: break;
        }
        const double secs = t.median_s;
        row cr{c->name, name_of(k), bytes, n, wire_bytes, t,
               static_cast<double>(bytes) / secs / 1e9, static_cast<double>(wire_bytes) / secs / 1e9,
               copy.median_s / secs, wrong, o.check};
        print_row(cr);
        rows.push_back(cr);
        total_wrong += wrong;
      }
    }
    std::printf("\n");
  }
  std::printf("# Out of bounds values : %zu %s\n#\n", total_wrong, !o.check ? "(not checked)" : total_wrong ? "FAILED" : "OK");
  if (!o.json.empty()) write_json(o, pinned, rows);
  return total_wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    o = parse(argc, argv);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "tutti-codec-bench: %s (--help for usage)\n", e.what.c_str());
    return 2;
  }
  return run(o);
}
