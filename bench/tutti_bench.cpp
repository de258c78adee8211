//! @file tutti_bench.cpp  tutti-bench: an nccl-tests-style size sweep of one collective.
//!
//! Flags and the printed table follow nccl-tests (-b -e -f -n -w -c -d -o; time, algbw, busbw,
//! #wrong), so numbers compare with what users already know. tutti adds -t ranks (threads over
//! transport::inproc), -C collective, -a algorithm and -M, the machine's memcpy bandwidth as a
//! reference. Time is the max over ranks of each rank's mean time per iteration.
//!
//! Build on its own:  g++ -std=c++20 -O3 -Iinclude bench/tutti_bench.cpp -o tutti-bench -pthread
//! Adding an algorithm: include it and add one line to `algorithms` below.
#include <tutti/tutti.hpp>

#include <getopt.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

// ---- heap allocations per thread, to show that timed loops allocate nothing --------------------
// Replacing the global operator new is the only way to see allocations made inside the library.
// The array, nothrow and array-delete forms of libstdc++ forward to these.
namespace {
thread_local std::uint64_t heap_allocations = 0;  // trivially initialised: safe inside operator new
}  // namespace

void* operator new(std::size_t bytes) {
  ++heap_allocations;
  if (void* p = std::malloc(bytes ? bytes : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t bytes, std::align_val_t align) {
  ++heap_allocations;
  const auto a = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(a, (bytes + a - 1) / a * a + (bytes ? 0 : a))) return p;
  throw std::bad_alloc();
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
// g++ sees free() inlined into code that got the pointer from operator new; both are ours.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace {

using tutti::dtype;
using tutti::op;
using inproc = tutti::transport::inproc;

enum class collective_kind { allreduce, reduce_scatter, allgather, broadcast };

struct collective_info {
  std::string_view name;
  collective_kind kind;
  bool reduces;       //!< has a redop column value
  bool rooted;        //!< has a root column value
  double bus_factor(int n) const {  // nccl-tests' PERFORMANCE.md
    switch (kind) {
      case collective_kind::allreduce: return 2.0 * (n - 1) / n;
      case collective_kind::reduce_scatter:
      case collective_kind::allgather: return static_cast<double>(n - 1) / n;
      case collective_kind::broadcast: return 1.0;
    }
    return 1.0;
  }
};

constexpr std::array<collective_info, 4> collectives = {{
    {"allreduce", collective_kind::allreduce, true, false},
    {"reduce_scatter", collective_kind::reduce_scatter, true, false},
    {"allgather", collective_kind::allgather, false, false},
    {"broadcast", collective_kind::broadcast, false, true},
}};

struct options {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t step_factor = 2;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  dtype type = dtype::f32;
  op reduction = op::sum;
  int ranks = 2;
  const collective_info* coll = &collectives[0];
  int root = 0;
  bool in_place = false;
  std::string algorithm = "ring";
  bool membw = false;
};

// ---- command line ---------------------------------------------------------------------------

struct usage_error {
  std::string what;
};

void print_usage(std::FILE* f) {
  std::fprintf(f,
               "usage: tutti-bench [options]\n"
               "  -b, --minbytes N        smallest message in bytes, K/M/G suffixes (default 8)\n"
               "  -e, --maxbytes N        largest message in bytes (default 64M)\n"
               "  -f, --stepfactor N      multiply the size by N between rows (default 2)\n"
               "  -n, --iters N           timed iterations per size (default 20)\n"
               "  -w, --warmup_iters N    untimed iterations at the largest size first, then before each size (default 5)\n"
               "  -c, --check 0|1         run one more, untimed iteration and count wrong elements (default 1)\n"
               "  -d, --datatype T        float double half bfloat16 int8 int32 int64 uint8 (default float)\n"
               "  -o, --op OP             sum prod min max avg (default sum)\n"
               "  -t, --ranks N           ranks, each a thread over transport::inproc (default 2)\n"
               "  -C, --collective C      allreduce reduce_scatter allgather broadcast (default allreduce)\n"
               "  -r, --root R            broadcast root (default 0)\n"
               "  -i, --inplace 0|1       in-place buffers (default 0: out of place)\n"
               "  -a, --algorithm A       ring (default ring)\n"
               "  -M, --membw 0|1         also measure 1-thread memcpy bandwidth and print busbw as %% of it\n"
               "  -J, --json FILE         JSON output: not available in this build (needs nlohmann-json3-dev)\n"
               "  -h, --help              this text\n"
               "Sizes are total buffer bytes (for reduce_scatter and allgather, all ranks' parts together),\n"
               "rounded down to whole elements per rank. Environment: TUTTI_CHUNK_BYTES, TUTTI_CHECK,\n"
               "TUTTI_TIMEOUT, TUTTI_LOG. Exit status: 0 ok, 1 wrong results or a failed rank, 2 bad usage.\n");
}

std::string flag_name(int c) { return std::string("-") + static_cast<char>(c); }

//! A byte count with an optional binary K/M/G suffix, like nccl-tests.
std::size_t parse_bytes(int flag, std::string_view s) {
  std::size_t mult = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K': case 'k': mult = std::size_t{1} << 10; break;
      case 'M': case 'm': mult = std::size_t{1} << 20; break;
      case 'G': case 'g': mult = std::size_t{1} << 30; break;
      default: break;
    }
  }
  const std::string_view digits = mult == 1 ? s : s.substr(0, s.size() - 1);
  std::size_t n = 0;
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (digits.empty() || ec != std::errc{} || p != digits.data() + digits.size())
    throw usage_error{flag_name(flag) + " '" + std::string(s) + "': not a byte size (like 8, 512K, 64M, 1G)"};
  if (n > std::numeric_limits<std::size_t>::max() / mult)
    throw usage_error{flag_name(flag) + " '" + std::string(s) + "': too large"};
  return n * mult;
}

long long parse_integer(int flag, std::string_view s, long long lo, long long hi) {
  long long n = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size())
    throw usage_error{flag_name(flag) + " '" + std::string(s) + "': not an integer"};
  if (n < lo || n > hi)
    throw usage_error{flag_name(flag) + " " + std::string(s) + ": must be in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]"};
  return n;
}

bool parse_bool(int flag, std::string_view s) {
  if (s == "0") return false;
  if (s == "1") return true;
  throw usage_error{flag_name(flag) + " '" + std::string(s) + "': must be 0 or 1"};
}

//! Finds `s` among the names of `all` (via name_of) or lists the choices.
template <class Container, class Name>
auto parse_choice(int flag, std::string_view s, const Container& all, Name name_of, std::string_view what) {
  std::string choices;
  for (const auto& x : all) {
    if (name_of(x) == s) return x;
    choices += (choices.empty() ? "" : ", ") + std::string(name_of(x));
  }
  throw usage_error{flag_name(flag) + " '" + std::string(s) + "': unknown " + std::string(what) + " (one of " +
                    choices + ")"};
}

options parse(int argc, char** argv) {
  static const ::option long_options[] = {
      {"minbytes", required_argument, nullptr, 'b'},    {"maxbytes", required_argument, nullptr, 'e'},
      {"stepfactor", required_argument, nullptr, 'f'},  {"iters", required_argument, nullptr, 'n'},
      {"warmup_iters", required_argument, nullptr, 'w'}, {"check", required_argument, nullptr, 'c'},
      {"datatype", required_argument, nullptr, 'd'},    {"op", required_argument, nullptr, 'o'},
      {"ranks", required_argument, nullptr, 't'},       {"collective", required_argument, nullptr, 'C'},
      {"root", required_argument, nullptr, 'r'},        {"inplace", required_argument, nullptr, 'i'},
      {"algorithm", required_argument, nullptr, 'a'},   {"membw", required_argument, nullptr, 'M'},
      {"json", required_argument, nullptr, 'J'},        {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  options o;
  bool root_given = false;
  opterr = 0;  // our own messages
  for (int c; (c = getopt_long(argc, argv, ":b:e:f:n:w:c:d:o:t:C:r:i:a:M:J:h", long_options, nullptr)) != -1;) {
    const std::string_view arg = optarg ? optarg : "";
    switch (c) {
      case 'b': o.min_bytes = parse_bytes(c, arg); break;
      case 'e': o.max_bytes = parse_bytes(c, arg); break;
      case 'f': o.step_factor = static_cast<std::size_t>(parse_integer(c, arg, 2, 1 << 20)); break;
      case 'n': o.iters = static_cast<int>(parse_integer(c, arg, 1, 1 << 30)); break;
      case 'w': o.warmup = static_cast<int>(parse_integer(c, arg, 0, 1 << 30)); break;
      case 'c': o.check = parse_bool(c, arg); break;
      case 'd': o.type = parse_choice(c, arg, tutti::all_dtypes, [](dtype t) { return tutti::name_of(t); }, "datatype"); break;
      case 'o': o.reduction = parse_choice(c, arg, tutti::all_ops, [](op x) { return tutti::name_of(x); }, "op"); break;
      case 't': o.ranks = static_cast<int>(parse_integer(c, arg, 1, 1024)); break;
      case 'C':
        o.coll = parse_choice(c, arg, std::array{&collectives[0], &collectives[1], &collectives[2], &collectives[3]},
                              [](const collective_info* x) { return x->name; }, "collective");
        break;
      case 'r': o.root = static_cast<int>(parse_integer(c, arg, 0, 1023)); root_given = true; break;
      case 'i': o.in_place = parse_bool(c, arg); break;
      case 'a': o.algorithm = arg; break;  // checked against the table in main
      case 'M': o.membw = parse_bool(c, arg); break;
      case 'J':
        throw usage_error{"-J: JSON output is not available: this build has no nlohmann/json "
                          "(Debian package nlohmann-json3-dev)"};
      case 'h': print_usage(stdout); std::exit(0);
      case ':': throw usage_error{flag_name(optopt ? optopt : '?') + " needs a value"};
      default:
        throw usage_error{optopt ? "unknown option " + flag_name(optopt)
                                 : "unknown option '" + std::string(argv[optind - 1]) + "'"};
    }
  }
  if (optind < argc) throw usage_error{"unexpected argument '" + std::string(argv[optind]) + "'"};
  if (o.min_bytes == 0) throw usage_error{"-b 0: the smallest size must be at least 1 byte"};
  if (o.min_bytes > o.max_bytes)
    throw usage_error{"-b " + std::to_string(o.min_bytes) + " is larger than -e " + std::to_string(o.max_bytes)};
  if (o.root >= o.ranks)
    throw usage_error{"-r " + std::to_string(o.root) + ": root must be below the number of ranks (-t " +
                      std::to_string(o.ranks) + ")"};
  if (root_given && !o.coll->rooted)
    throw usage_error{"-r: " + std::string(o.coll->name) + " has no root (only broadcast does)"};
  return o;
}

// ---- sizes and buffer layout ----------------------------------------------------------------------

//! One row of the table: the collective's byte and element counts.
struct row_shape {
  std::size_t bytes;  //!< "size": total buffer bytes, as nccl-tests prints it
  std::size_t count;  //!< "count": elements per rank (all elements for allreduce and broadcast)
};

row_shape shape_of(const options& o, std::size_t size) {
  const std::size_t esz = tutti::size_of(o.type);
  const auto n = static_cast<std::size_t>(o.ranks);
  switch (o.coll->kind) {
    case collective_kind::reduce_scatter:
    case collective_kind::allgather: {
      const std::size_t count = size / esz / n;
      return {count * n * esz, count};
    }
    default: return {size / esz * esz, size / esz};
  }
}

std::vector<std::size_t> sizes_of(const options& o) {
  std::vector<std::size_t> sizes;
  for (std::size_t s = o.min_bytes;; s *= o.step_factor) {
    sizes.push_back(s);
    if (s > o.max_bytes / o.step_factor) break;
  }
  return sizes;
}

//! Page-aligned memory from malloc (not operator new, so it is not counted as a hot-path allocation).
struct free_delete {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};
using page_buffer = std::unique_ptr<std::byte, free_delete>;

page_buffer allocate_touched(std::size_t bytes, int fill) {
  constexpr std::size_t page = 4096;
  const std::size_t rounded = (bytes + page - 1) / page * page + page;  // never 0
  page_buffer b(static_cast<std::byte*>(std::aligned_alloc(page, rounded)));
  if (!b) throw std::bad_alloc();
  std::memset(b.get(), fill, rounded);  // first touch, by the thread that will use it
  return b;
}

// ---- inputs and expected results ----------------------------------------------------------------
// Rank r's element i is a small integer with period 17 in i, so every reduction below is exact in
// every dtype (|sums| <= 8n; products are of +-1 and +-2) and does not depend on reduction order:
// results are compared exactly, and the expected values are a 17-entry table per check.

constexpr std::size_t period = 17;

long long input_value(int rank, std::size_t i, op o) {
  const std::size_t k = (i * 7 + static_cast<std::size_t>(rank) * 13) % period;
  if (o == op::prod) {
    constexpr int factors[4] = {1, -1, 2, -2};
    return factors[k % 4];
  }
  return static_cast<long long>(k) - 8;
}

template <class T>
T from_integer(long long v) {
  if constexpr (std::is_same_v<T, tutti::half> || std::is_same_v<T, tutti::bfloat16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);  // unsigned types wrap, as the library's arithmetic does
}

template <class T>
using table = std::array<T, period>;

template <class T>
table<T> input_table(int rank, op o) {
  table<T> t{};
  for (std::size_t m = 0; m < period; ++m) t[m] = from_integer<T>(input_value(rank, m, o));
  return t;
}

//! The reduction over all ranks of element m, in the element type's own arithmetic
//! (integers wrap modulo 2^bits; avg divides once, in fp32 for 16-bit floats).
template <class T>
table<T> reduced_table(int n, op o) {
  table<T> t{};
  for (std::size_t m = 0; m < period; ++m) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      T acc = static_cast<T>(input_value(0, m, o));
      for (int r = 1; r < n; ++r) {
        const T v = static_cast<T>(input_value(r, m, o));
        switch (o) {
          case op::sum: case op::avg: acc = static_cast<T>(static_cast<U>(static_cast<U>(acc) + static_cast<U>(v))); break;
          case op::prod:
            acc = static_cast<T>(static_cast<U>(static_cast<std::uint64_t>(static_cast<U>(acc)) *
                                                static_cast<std::uint64_t>(static_cast<U>(v))));
            break;
          case op::min: acc = std::min(acc, v); break;
          case op::max: acc = std::max(acc, v); break;
        }
      }
      // avg: the sum divided by the rank count as an int (documented in op.hpp), truncating.
      t[m] = o == op::avg ? static_cast<T>(static_cast<long long>(acc) / n) : acc;
    } else {
      double acc = static_cast<double>(input_value(0, m, o));  // exact
      for (int r = 1; r < n; ++r) {
        const auto v = static_cast<double>(input_value(r, m, o));
        switch (o) {
          case op::sum: case op::avg: acc += v; break;
          case op::prod: acc *= v; break;
          case op::min: acc = std::min(acc, v); break;
          case op::max: acc = std::max(acc, v); break;
        }
      }
      if (o != op::avg) t[m] = from_integer<T>(static_cast<long long>(acc));
      else if constexpr (std::is_same_v<T, double>) t[m] = acc / n;
      else t[m] = T(static_cast<float>(acc) / static_cast<float>(n));
    }
  }
  return t;
}

//! p[i] = tab[(first + i) % period] for i < count.
template <class T>
void fill(void* buf, std::size_t count, const table<T>& tab, std::size_t first = 0) {
  auto* p = static_cast<T*>(buf);
  for (std::size_t i = 0, m = first % period; i < count; ++i, m = m + 1 == period ? 0 : m + 1) p[i] = tab[m];
}

//! How many of p[i] differ from tab[(first + i) % period].
template <class T>
std::size_t count_wrong(const void* buf, std::size_t count, const table<T>& tab, std::size_t first = 0) {
  const auto* p = static_cast<const T*>(buf);
  std::size_t wrong = 0;
  for (std::size_t i = 0, m = first % period; i < count; ++i, m = m + 1 == period ? 0 : m + 1)
    wrong += !(p[i] == tab[m]);
  return wrong;
}

// ---- one rank ------------------------------------------------------------------------------

//! What every rank reports for a row; gathered as doubles so one allgather carries it.
struct rank_stats {
  double mean_us = 0;
  double wrong = 0;
  double allocations = 0;
};
static_assert(sizeof(rank_stats) == 3 * sizeof(double));

//! Filled by rank 0 as it prints, read by main after the ranks have joined.
struct summary {
  double busbw_sum = 0;
  std::size_t rows = 0;
  double wrong = 0;
  double allocations = 0;
};

void format_time(char (&out)[32], double us) {  // nccl-tests' getFloatStr(value, 7)
  int power = 0;
  for (double v = 1; us >= v; v *= 10) ++power;
  if (power < 5) std::snprintf(out, sizeof out, "%7.2f", us);
  else if (power < 6) std::snprintf(out, sizeof out, "%7.1f", us);
  else if (power < 8) std::snprintf(out, sizeof out, "%7.0f", us);
  else std::snprintf(out, sizeof out, "%7.1e", us);
}

template <class Comm>
class rank_bench {
 public:
  rank_bench(Comm& comm, const options& o, std::size_t max_size, double membw_gbs)
      : comm_(comm), o_(o), n_(comm.size()), r_(comm.rank()), esz_(tutti::size_of(o.type)), membw_(membw_gbs) {
    const row_shape big = shape_of(o, max_size);
    const std::size_t per_rank = big.count * esz_;
    // Out of place: send holds this rank's input (the whole buffer except for allgather), recv the
    // output (everything except for reduce_scatter). In place: one buffer of the total size.
    const bool gather = o.coll->kind == collective_kind::allgather;
    const bool scatter = o.coll->kind == collective_kind::reduce_scatter;
    recv_ = allocate_touched(o.in_place || !scatter ? big.bytes : per_rank, 0);
    if (!o.in_place) {
      send_ = allocate_touched(gather ? per_rank : big.bytes, 0);
      tutti::visit(o.type, [&]<class T>(std::type_identity<T>) {
        fill<T>(send_.get(), (gather ? per_rank : big.bytes) / esz_, input_table<T>(r_, o.reduction));
      });
    }
    all_stats_.resize(static_cast<std::size_t>(n_));
  }

  //! Grows the library's scratch and lets the scheduler settle the rank threads before any row.
  void warm_up(std::size_t size) {
    set_views(shape_of(o_, size));
    for (int i = 0; i < o_.warmup; ++i) call();
  }

  void run_row(std::size_t size, summary& sum) {
    const row_shape s = shape_of(o_, size);
    set_views(s);
    for (int i = 0; i < o_.warmup; ++i) call();
    comm_.barrier();
    const std::uint64_t allocs_before = heap_allocations;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o_.iters; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    rank_stats mine;
    mine.allocations = static_cast<double>(heap_allocations - allocs_before);
    mine.mean_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / o_.iters;
    mine.wrong = o_.check ? static_cast<double>(checked_iteration(s)) : 0.0;
    comm_.allgather(tutti::const_tensor_view(&mine, 3, dtype::f64),
                    tutti::tensor_view(all_stats_.data(), 3 * all_stats_.size(), dtype::f64));
    if (r_ == 0) print_row(s, sum);
  }

 private:
  void set_views(const row_shape& s) {
    const std::size_t per_rank_bytes = s.count * esz_;
    const std::size_t own = static_cast<std::size_t>(r_) * per_rank_bytes;
    std::byte* recv = recv_.get();
    const std::byte* send = o_.in_place ? recv : send_.get();
    switch (o_.coll->kind) {
      case collective_kind::allreduce:
      case collective_kind::broadcast:
        in_ = {send, s.count, o_.type};
        out_ = {recv, s.count, o_.type};
        break;
      case collective_kind::reduce_scatter:
        in_ = {send, s.count * static_cast<std::size_t>(n_), o_.type};
        out_ = {o_.in_place ? recv + own : recv, s.count, o_.type};
        break;
      case collective_kind::allgather:
        in_ = {o_.in_place ? recv + own : send, s.count, o_.type};
        out_ = {recv, s.count * static_cast<std::size_t>(n_), o_.type};
        break;
    }
  }

  void call() {
    using algorithm = typename Comm::algorithm_type;
    using context = typename Comm::context_type;
    switch (o_.coll->kind) {
      case collective_kind::allreduce:
        if constexpr (tutti::has_allreduce<algorithm, context>) comm_.allreduce(in_, out_, o_.reduction);
        break;
      case collective_kind::reduce_scatter:
        if constexpr (tutti::has_reduce_scatter<algorithm, context>) comm_.reduce_scatter(in_, out_, o_.reduction);
        break;
      case collective_kind::allgather:
        if constexpr (tutti::has_allgather<algorithm, context>) comm_.allgather(in_, out_);
        break;
      case collective_kind::broadcast:
        if constexpr (tutti::has_broadcast<algorithm, context>) comm_.broadcast(in_, out_, o_.root);
        break;
    }
  }

  //! Resets inputs the timed loop may have overwritten (in place), poisons the output, runs one
  //! more iteration and counts wrong elements. Untimed.
  std::size_t checked_iteration(const row_shape& s) {
    return tutti::visit(o_.type, [&]<class T>(std::type_identity<T>) -> std::size_t {
      const op o = o_.reduction;
      const auto n = static_cast<std::size_t>(n_);
      const std::size_t own_first = static_cast<std::size_t>(r_) * s.count;  // in elements
      std::memset(out_.data, 0xA5, out_.bytes());
      if (o_.in_place) {
        switch (o_.coll->kind) {
          case collective_kind::allreduce: fill<T>(recv_.get(), s.count, input_table<T>(r_, o)); break;
          case collective_kind::reduce_scatter: fill<T>(recv_.get(), s.count * n, input_table<T>(r_, o)); break;
          case collective_kind::allgather:
            fill<T>(recv_.get() + own_first * esz_, s.count, input_table<T>(r_, o));
            break;
          case collective_kind::broadcast:
            if (r_ == o_.root) fill<T>(recv_.get(), s.count, input_table<T>(r_, o));
            break;
        }
      }
      call();
      switch (o_.coll->kind) {
        case collective_kind::allreduce: return count_wrong<T>(out_.data, s.count, reduced_table<T>(n_, o));
        case collective_kind::reduce_scatter:
          return count_wrong<T>(out_.data, s.count, reduced_table<T>(n_, o), own_first);
        case collective_kind::allgather: {
          std::size_t wrong = 0;
          for (int p = 0; p < n_; ++p)
            wrong += count_wrong<T>(static_cast<const std::byte*>(out_.data) + static_cast<std::size_t>(p) * s.count * esz_,
                                    s.count, input_table<T>(p, o));
          return wrong;
        }
        case collective_kind::broadcast: return count_wrong<T>(out_.data, s.count, input_table<T>(o_.root, o));
      }
      return 0;
    });
  }

  void print_row(const row_shape& s, summary& sum) {
    rank_stats worst;
    for (const auto& st : all_stats_) {
      worst.mean_us = std::max(worst.mean_us, st.mean_us);
      worst.wrong += st.wrong;
      worst.allocations += st.allocations;
    }
    const double algbw = worst.mean_us > 0 ? static_cast<double>(s.bytes) / worst.mean_us / 1e3 : 0;  // GB/s
    const double busbw = algbw * o_.coll->bus_factor(n_);
    char time[32], wrong[32];
    format_time(time, worst.mean_us);
    if (o_.check) std::snprintf(wrong, sizeof wrong, "%.0f", worst.wrong);
    else std::snprintf(wrong, sizeof wrong, "N/A");
    std::printf("%12zu  %12zu  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %5s", s.bytes, s.count,
                std::string(tutti::name_of(o_.type)).c_str(),
                o_.coll->reduces ? std::string(tutti::name_of(o_.reduction)).c_str() : "none",
                o_.coll->rooted ? o_.root : -1, time, algbw, busbw, wrong);
    if (membw_ > 0) std::printf("  %6.1f", 100.0 * busbw / membw_);
    std::printf("\n");
    std::fflush(stdout);
    sum.busbw_sum += busbw;
    ++sum.rows;
    sum.wrong += worst.wrong;
    sum.allocations += worst.allocations;
  }

  Comm& comm_;
  const options& o_;
  int n_, r_;
  std::size_t esz_;
  double membw_;
  page_buffer send_, recv_;
  tutti::const_tensor_view in_;
  tutti::tensor_view out_;
  std::vector<rank_stats> all_stats_;
};

// ---- the machine's own memory bandwidth (-M 1) ---------------------------------------------------

//! Single-thread memcpy of 256 MiB, best of 5, counting bytes read plus bytes written
//! (the convention of PEERS.md's "memcpy one thread 24 GB/s").
double memcpy_bandwidth_gbs() {
  constexpr std::size_t bytes = std::size_t{256} << 20;
  page_buffer src = allocate_touched(bytes, 1), dst = allocate_touched(bytes, 0);
  double best = std::numeric_limits<double>::infinity();
  for (int k = 0; k < 5; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.get(), src.get(), bytes);
#if defined(__GNUC__)
    asm volatile("" : : "r"(dst.get()) : "memory");  // the copy is observable: keep it
#endif
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return 2.0 * static_cast<double>(bytes) / best / 1e9;
}

// ---- one runner per algorithm ---------------------------------------------------------------------

template <class Algorithm>
bool implements(collective_kind k) {
  using context = tutti::algorithm::context<inproc>;
  switch (k) {
    case collective_kind::allreduce: return tutti::has_allreduce<Algorithm, context>;
    case collective_kind::reduce_scatter: return tutti::has_reduce_scatter<Algorithm, context>;
    case collective_kind::allgather: return tutti::has_allgather<Algorithm, context>;
    case collective_kind::broadcast: return tutti::has_broadcast<Algorithm, context>;
  }
  return false;
}

template <class Algorithm>
int run_benchmark(const options& o) {
  using comm_t = tutti::communicator<inproc, Algorithm>;
  if (!implements<Algorithm>(o.coll->kind)) {
    std::fprintf(stderr, "tutti-bench: error: algorithm %s does not implement %s\n",
                 std::string(Algorithm::name).c_str(), std::string(o.coll->name).c_str());
    return 2;
  }
  const tutti::communicator_options copt = tutti::communicator_options::from_env();  // throws on bad TUTTI_*
  const std::vector<std::size_t> sizes = sizes_of(o);
  const double membw = o.membw ? memcpy_bandwidth_gbs() : 0.0;

  const unsigned cpus = std::thread::hardware_concurrency();
  std::printf("# tutti-bench: tutti %s, collective %s, transport %s (ranks are threads), algorithm %s\n",
              tutti::version, std::string(o.coll->name).c_str(), inproc::name, std::string(Algorithm::name).c_str());
  std::printf("# ranks %d  dtype %s  op %s  %s%s\n", o.ranks, std::string(tutti::name_of(o.type)).c_str(),
              o.coll->reduces ? std::string(tutti::name_of(o.reduction)).c_str() : "none",
              o.in_place ? "in-place" : "out-of-place",
              o.coll->rooted ? (std::string("  root ") + std::to_string(o.root)).c_str() : "");
  std::printf("# minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %d iters: %d validation: %d\n",
              o.min_bytes, o.max_bytes, o.step_factor, o.warmup, o.iters, o.check ? 1 : 0);
  std::printf("# chunk_bytes %zu (TUTTI_CHUNK_BYTES)  cross-rank check %s (TUTTI_CHECK)  timeout %.0f s  cpus %u%s\n",
              copt.chunk_bytes, copt.check ? "on" : "off",
              std::chrono::duration<double>(copt.timeout).count(), cpus,
              cpus && static_cast<unsigned>(o.ranks) > cpus ? " (oversubscribed)" : "");
  if (o.membw) std::printf("# memory bandwidth (memcpy, 1 thread): %.2f GB/s (bytes read + written, 256 MiB, best of 5)\n", membw);
  std::printf("#\n");
  std::printf("# %s\n", o.in_place ? "in-place" : "out-of-place");
  std::printf("#       size         count      type   redop    root     time   algbw   busbw #wrong%s\n",
              o.membw ? "  %membw" : "");
  std::printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       %s\n",
              o.membw ? "        " : "");
  std::fflush(stdout);

  summary sum;
  auto errors = inproc::run(o.ranks, [&](inproc& t) {
    comm_t comm(t, copt);
    rank_bench<comm_t> bench(comm, o, sizes.back(), membw);
    bench.warm_up(sizes.back());  // like nccl-tests: once at the largest size before the sweep
    for (std::size_t size : sizes) bench.run_row(size, sum);
  });

  int failed = 0;
  for (std::size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r]) continue;
    ++failed;
    try {
      std::rethrow_exception(errors[r]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tutti-bench: rank %zu failed: %s\n", r, e.what());
    } catch (...) {
      std::fprintf(stderr, "tutti-bench: rank %zu failed with a non-standard exception\n", r);
    }
  }
  if (failed) return 1;
  std::printf("# Out of bounds values : %.0f %s\n", sum.wrong, sum.wrong == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth : %g\n", sum.rows ? sum.busbw_sum / static_cast<double>(sum.rows) : 0.0);
  std::printf("# Heap allocations in timed loops (all ranks, all sizes): %.0f\n", sum.allocations);
  std::printf("#\n");
  return sum.wrong == 0 ? 0 : 1;
}

struct algorithm_entry {
  std::string_view name;
  int (*run)(const options&);
};

//! Every algorithm tutti-bench can run; a new one is one more line.
constexpr algorithm_entry algorithms[] = {
    {tutti::algorithm::ring::name, &run_benchmark<tutti::algorithm::ring>},
};

}  // namespace

int main(int argc, char** argv) {
  try {
    const options o = parse(argc, argv);
    const algorithm_entry* entry = nullptr;
    std::string names;
    for (const auto& a : algorithms) {
      if (a.name == o.algorithm) entry = &a;
      names += (names.empty() ? "" : ", ") + std::string(a.name);
    }
    if (!entry) throw usage_error{"-a '" + o.algorithm + "': unknown algorithm (one of " + names + ")"};
    return entry->run(o);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "tutti-bench: error: %s\n(tutti-bench -h lists the options)\n", e.what.c_str());
    return 2;
  } catch (const tutti::invalid_argument& e) {  // a bad TUTTI_* variable
    std::fprintf(stderr, "tutti-bench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-bench: error: %s\n", e.what());
    return 1;
  }
}
