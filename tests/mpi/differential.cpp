//! @file differential.cpp  tutti's collectives against Open MPI's, on the same inputs, in one job.
//!
//! Run as `mpirun.openmpi -np 4 --oversubscribe tutti_mpi_differential [algorithm...]` (CTest runs
//! one job per algorithm: see CMakeLists.txt; no argument runs them all). Every rank builds a tutti
//! communicator over transport::shm from Open MPI's environment (OMPI_COMM_WORLD_*), draws
//! pseudo-random inputs seeded by its rank and the case, runs each collective through MPI and then
//! through tutti, out of place and in place, and compares its own results with MPI's:
//!
//!   allreduce       MPI_Allreduce               reduce     MPI_Reduce (roots 0 and 2)
//!   reduce_scatter  MPI_Reduce_scatter_block    broadcast  MPI_Bcast (roots 0 and 3)
//!   allgather       MPI_Allgather               alltoall   MPI_Alltoall
//!
//! dtypes int8, int32, int64, uint8, float, double; ops sum, prod, min, max, avg; counts 0, 1, 7,
//! 1009 and 100003 (prime: no split divides it). What "equal" means:
//!   - integers: bit for bit. Inputs span the whole range, so sums and products wrap modulo 2^bits
//!     (tutti defines that; Open MPI's base C loops do the same on two's-complement hardware, but
//!     not its op/avx component, which saturates 8-bit sums: main() deselects it, see
//!     reference_wraps_8bit_sums).
//!   - floating point min, max and every data movement: bit for bit.
//!   - floating point sum, prod, avg: within what rounding alone explains, whatever the order of
//!     the reduction (see fp_bound below; the bound is written down there and computed per element).
//! Not compared: half and bfloat16 (MPI has no such types), barrier (nothing to compare). MPI has
//! no avg: tutti's avg is compared with MPI's sum divided by the world size.
//! Also checked: out-of-place inputs are left unchanged, and a non-root's buffer is never written
//! by reduce (tutti passes it as null).
//!
//! A mismatch prints rank, algorithm, collective, dtype, op, count, placement, root, element, both
//! values and the bound (at most max_printed elements per case), and the program exits 1 once all
//! cases have run. An exception from tutti names the case and aborts the whole job (MPI_Abort): the
//! peers would otherwise wait in their collective until TUTTI_TIMEOUT.
//!
//! Adding an algorithm is one line in `algorithms` at the bottom: CMakeLists.txt reads the names from
//! there and registers one test per name. Collectives an algorithm lacks (tutti::has_reduce etc.)
//! are skipped and said so. hierarchical runs over two simulated nodes (TUTTI_NODE_ID).
#define OMPI_SKIP_MPICXX 1  // the C API is all we use; no libmpi_cxx
#include <mpi.h>
#ifndef OPEN_MPI
#error "tests/mpi compares tutti with Open MPI: compile against Open MPI's mpi.h (pkg-config ompi-c), not another MPI's"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <tutti/algorithm/concepts.hpp>
#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/communicator.hpp>
#include <tutti/core/dtype.hpp>
#include <tutti/core/op.hpp>
#include <tutti/core/tensor_view.hpp>
#include <tutti/transport/shm.hpp>

#include <tutti/algorithm/halving_doubling.hpp>
#include <tutti/algorithm/tree.hpp>

namespace {

using tutti::dtype;
using tutti::op;

constexpr std::size_t counts[] = {0, 1, 7, 1009, 100003};
constexpr op ops[] = {op::sum, op::prod, op::min, op::max, op::avg};
constexpr int broadcast_roots[] = {0, 3};
constexpr int reduce_roots[] = {0, 2};
constexpr std::size_t max_printed = 5;  //!< mismatching elements printed per case; the rest are counted

//! Calls fn(std::type_identity<T>{}) for each element type compared (those MPI has too).
template <class F>
void for_each_type(F&& fn) {
  fn(std::type_identity<std::int8_t>{});
  fn(std::type_identity<std::int32_t>{});
  fn(std::type_identity<std::int64_t>{});
  fn(std::type_identity<std::uint8_t>{});
  fn(std::type_identity<std::int16_t>{});
  fn(std::type_identity<std::uint32_t>{});
  fn(std::type_identity<std::uint64_t>{});
  fn(std::type_identity<float>{});
  fn(std::type_identity<double>{});
}

template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, std::int8_t>) return MPI_INT8_T;
  else if constexpr (std::is_same_v<T, std::int16_t>) return MPI_INT16_T;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return MPI_UINT32_T;
  else if constexpr (std::is_same_v<T, std::uint64_t>) return MPI_UINT64_T;
  else if constexpr (std::is_same_v<T, std::int32_t>) return MPI_INT32_T;
  else if constexpr (std::is_same_v<T, std::int64_t>) return MPI_INT64_T;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return MPI_UNSIGNED_CHAR;
  else if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  else {
    static_assert(std::is_same_v<T, double>);
    return MPI_DOUBLE;
  }
}

//! MPI has no avg: tutti's avg is checked against MPI's sum (divided afterwards).
MPI_Op mpi_op(op o) {
  switch (o) {
    case op::prod: return MPI_PROD;
    case op::min: return MPI_MIN;
    case op::max: return MPI_MAX;
    case op::sum: case op::avg: break;
  }
  return MPI_SUM;
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

//! SplitMix64: a seed gives the same sequence on every rank, run and compiler.
struct random_stream {
  std::uint64_t state;
  std::uint64_t next() noexcept {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double unit() noexcept { return static_cast<double>(next() >> 11) * 0x1p-53; }  //!< [0, 1)
};

//! One element. Integers: the whole range. Floating point, for prod: ±[0.5, 2), so products over
//! any world stay normal; otherwise ±[0, 1) scaled by 2^-8 .. 2^8, so sums cancel and their
//! rounding depends on the order of the reduction (which the bound must then cover).
template <class T>
T draw(random_stream& g, op o) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(g.next());  // modular conversion (C++20)
  } else {
    const double sign = (g.next() & 1) ? -1.0 : 1.0;
    if (o == op::prod) return static_cast<T>(sign * std::exp2(2 * g.unit() - 1));
    return static_cast<T>(sign * g.unit() * std::exp2(static_cast<int>(g.next() % 17) - 8));
  }
}

template <class T>
std::vector<T> draw_input(std::uint64_t seed, op o, std::size_t count) {
  random_stream g{seed};
  std::vector<T> v(count);
  for (auto& x : v) x = draw<T>(g, o);
  return v;
}

//! Filled with 0xa5 bytes: an element tutti forgot to write shows up.
template <class T>
std::vector<T> poisoned(std::size_t count) {
  std::vector<T> v(count);
  if (count) std::memset(v.data(), 0xa5, count * sizeof(T));
  return v;
}

template <class T>
bool same_bits(const T& a, const T& b) noexcept {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T>
std::string text(T v) {
  char buf[64];
  if constexpr (std::is_same_v<T, float>) std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  else if constexpr (std::is_same_v<T, double>) std::snprintf(buf, sizeof buf, "%.17g", v);
  else if constexpr (std::is_signed_v<T>) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  else std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
  return buf;
}

// ---- The floating-point bound ---------------------------------------------------------------
//
// Write u for the unit roundoff (2^-24 float, 2^-53 double) and gamma(k) = k u / (1 - k u).
//
// sum:  n terms added by n-1 additions in ANY order (any tree, any chunking) give
//         |fl(s) - s| <= gamma(n-1) * sum_i |x_i|       (Higham, Accuracy and Stability of
//       Numerical Algorithms, 2nd ed., (4.4)). tutti and MPI each satisfy it, so
//         |tutti - mpi| <= 2 gamma(n-1) * S,   S = sum_i |x_i|.
//       S is computed per element by MPI_Allreduce of |x_i| in double; that sum of non-negative
//       terms S' >= S (1 - gamma_double(n-1)), so S <= S' / (1 - gamma_double(n-1)) is used.
// prod: n-1 multiplications in any order: |fl(p) - p| <= gamma(n-1) |p|, and |p| <= |fl(p)| /
//       (1 - gamma(n-1)), so |tutti - mpi| <= 2 gamma(n-1) / (1 - gamma(n-1)) * max(|tutti|, |mpi|).
//       (Inputs in ±[0.5, 2) keep every partial product normal: no underflow term.)
// avg:  tutti divides its sum once, at the end: a_t = fl(s_t / n); the reference is a_m =
//       fl(s_m / n) from MPI's sum s_m, in the same type. |fl(x/n) - x/n| <= u |x/n| and
//       |x/n| <= |fl(x/n)| / (1 - u), so
//         |a_t - a_m| <= 2 gamma(n-1) S / n + u / (1 - u) (|a_t| + |a_m|) + 2 denorm_min
//       (the last term: a quotient may underflow to a subnormal).
// min, max, and n = 1 (gamma(0) = 0): bit for bit.
// The bound is evaluated in double; a relative slack of 2^-40 covers that evaluation's own rounding.

template <class T>
constexpr double unit_roundoff = std::numeric_limits<T>::epsilon() / 2;

constexpr double gamma_of(int k, double u) { return k * u / (1 - k * u); }

//! Largest |tutti - reference| rounding can explain for one element of a floating reduction over
//! n ranks (0: must be bit-identical). abs_sum: S' for that element (sum and avg only).
template <class T>
double fp_bound(op o, int n, T got, T reference, double abs_sum) {
  const double u = unit_roundoff<T>, g = gamma_of(n - 1, u);
  const double s = abs_sum / (1 - gamma_of(n - 1, unit_roundoff<double>));
  const double at = std::fabs(static_cast<double>(got)), am = std::fabs(static_cast<double>(reference));
  switch (o) {
    case op::sum: return 2 * g * s;
    case op::prod: return 2 * g / (1 - g) * std::max(at, am);
    case op::avg:
      return n == 1 ? 0.0
                    : 2 * g * s / n + u / (1 - u) * (at + am) +
                          2 * static_cast<double>(std::numeric_limits<T>::denorm_min());
    case op::min: case op::max: break;
  }
  return 0.0;
}

//! What a case is, for messages.
struct case_info {
  std::string_view algorithm;
  std::string_view collective;
  dtype type = dtype::f32;
  const op* reduction = nullptr;  //!< null for data movement
  std::size_t count = 0;
  bool in_place = false;
  int root = -1;

  [[nodiscard]] std::string text() const {
    std::string s = "algorithm " + std::string(algorithm) + ", " + std::string(collective) + ", " +
                    std::string(tutti::name_of(type));
    if (reduction) s += " " + std::string(tutti::name_of(*reduction));
    s += ", count " + std::to_string(count) + (in_place ? ", in place" : ", out of place");
    if (root >= 0) s += ", root " + std::to_string(root);
    return s;
  }
};

void print_line(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

//! Prints one mismatching element (the first max_printed of a case) and counts it.
class mismatch_log {
 public:
  mismatch_log(const case_info& c, std::string_view what) : case_(c), what_(what) {}
  ~mismatch_log() {
    if (count_ > max_printed && printed_by_rank_ <= max_printed_by_rank)
      print_line("tutti-mpi: rank " + std::to_string(world_rank()) + ": " + case_.text() + ": ... " +
                 std::to_string(count_ - max_printed) + " more mismatching elements (" + std::to_string(count_) +
                 " in all)");
  }
  mismatch_log(const mismatch_log&) = delete;
  mismatch_log& operator=(const mismatch_log&) = delete;

  //! got/expected: labelled values ("tutti 3", "MPI 4"); note: the bound, or why none.
  void add(std::size_t index, const std::string& got, const std::string& expected, const std::string& note) {
    if (count_++ >= max_printed) return;
    if (++printed_by_rank_ > max_printed_by_rank) {
      if (printed_by_rank_ == max_printed_by_rank + 1)
        print_line("tutti-mpi: rank " + std::to_string(world_rank()) + ": further mismatches are counted, not printed");
      return;
    }
    print_line("tutti-mpi: MISMATCH rank " + std::to_string(world_rank()) + ": " + case_.text() + ": " +
               std::string(what_) + " element " + std::to_string(index) + ": " + got + ", " + expected + ", " + note);
  }
  [[nodiscard]] std::size_t count() const noexcept { return count_; }

 private:
  static constexpr std::size_t max_printed_by_rank = 200;
  static inline std::size_t printed_by_rank_ = 0;
  const case_info& case_;
  std::string_view what_;
  std::size_t count_ = 0;
};

//! Floating-point elements that differ from MPI's yet pass: how many, and how close to the bound.
struct rounding_stats {
  std::size_t differing = 0;
  double worst = 0;  //!< largest |tutti - MPI| / bound seen
};

//! A reduction's result against MPI's (for avg: MPI's sum, divided here). abs_sum: S' per element
//! for floating sum and avg, else null. Returns the number of mismatching elements.
template <class T>
std::size_t compare_reduced(const case_info& c, int n, const T* got, const T* mpi, const double* abs_sum,
                            rounding_stats& rounding) {
  const op o = *c.reduction;
  mismatch_log log(c, "result");
  for (std::size_t i = 0; i < c.count; ++i) {
    T expected = mpi[i];
    if (o == op::avg && n > 1) {
      // tutti's avg: integers truncate toward zero (the sum having wrapped), floats divide once.
      using W = std::conditional_t<std::is_integral_v<T>, std::common_type_t<T, int>, T>;
      expected = static_cast<T>(static_cast<W>(mpi[i]) / static_cast<W>(n));
    }
    if (same_bits(got[i], expected)) continue;
    double bound = 0;
    if constexpr (std::is_floating_point_v<T>) {
      bound = fp_bound<T>(o, n, got[i], expected, abs_sum ? abs_sum[i] : 0.0);
      const double diff = std::fabs(static_cast<double>(got[i]) - static_cast<double>(expected));
      if (bound > 0 && diff <= bound * (1 + 0x1p-40)) {
        ++rounding.differing;
        rounding.worst = std::max(rounding.worst, diff / bound);
        continue;
      }
      char b[96];
      std::snprintf(b, sizeof b, "|difference| %.3g, bound %.3g", diff, bound);
      log.add(i, "tutti " + text(got[i]), "MPI " + text(expected) + (o == op::avg ? " (sum / n)" : ""), b);
    } else {
      log.add(i, "tutti " + text(got[i]), "MPI " + text(expected) + (o == op::avg ? " (sum / n)" : ""),
              "integers must be identical");
    }
  }
  return log.count();
}

//! Data that must be identical bit for bit: tutti's moved data against MPI's.
template <class T>
std::size_t compare_exact(const case_info& c, std::string_view what, const T* got, const T* expected,
                          std::size_t count, std::string_view got_label = "tutti",
                          std::string_view expected_label = "MPI") {
  mismatch_log log(c, what);
  for (std::size_t i = 0; i < count; ++i) {
    if (same_bits(got[i], expected[i])) continue;
    log.add(i, std::string(got_label) + " " + text(got[i]), std::string(expected_label) + " " + text(expected[i]),
            "must be identical");
  }
  return log.count();
}

//! A buffer tutti must not have written (a const input, a non-root's reduce buffer).
template <class T>
std::size_t unchanged(const case_info& c, std::string_view what, const T* now, const T* was, std::size_t count) {
  return compare_exact(c, what, now, was, count, "now", "was");
}

template <class T>
tutti::tensor_view view(std::vector<T>& v, std::size_t first, std::size_t count) {
  return tutti::tensor_view(std::span<T>(v.data() + first, count));
}
template <class T>
tutti::tensor_view view(std::vector<T>& v) { return view(v, 0, v.size()); }
template <class T>
tutti::const_tensor_view cview(const std::vector<T>& v, std::size_t first, std::size_t count) {
  return tutti::const_tensor_view(std::span<const T>(v.data() + first, count));
}
template <class T>
tutti::const_tensor_view cview(const std::vector<T>& v) { return cview(v, 0, v.size()); }

//! The same seed on every run; different per rank and per case.
std::uint64_t seed_of(std::initializer_list<std::uint64_t> parts) {
  random_stream g{0x7475747469ull};  // "tutti"
  for (auto p : parts) g.state ^= p + g.next();
  return g.next();
}

//! Roots in [0, n): with fewer ranks than a listed root, the last rank stands in for it.
std::vector<int> roots_for(std::span<const int> wanted, int n) {
  std::vector<int> roots;
  for (int r : wanted) {
    const int root = r < n ? r : n - 1;
    if (std::find(roots.begin(), roots.end(), root) == roots.end()) roots.push_back(root);
  }
  return roots;
}

enum class which : std::uint64_t { allreduce, reduce_scatter, allgather, broadcast, reduce, alltoall };

//! Runs every case of every collective Algorithm implements, on one communicator.
template <class Algorithm>
class differential {
 public:
  using communicator_type = tutti::communicator<tutti::transport::shm, Algorithm>;
  using context_type = typename communicator_type::context_type;

  differential(communicator_type& comm, std::string_view name) : comm_(comm), name_(name) {}

  //! Returns this rank's number of mismatching elements. A collective the algorithm lacks is a
  //! discarded branch here, so its communicator member (a static_assert) is never instantiated.
  std::size_t run() {
    using A = Algorithm;
    using C = context_type;
    if constexpr (tutti::has_allreduce<A, C>)
      section("allreduce", [&] { for_each_reduction([&]<class T>(op o, std::size_t n) { allreduce<T>(o, n); }); });
    else skipped("allreduce");
    if constexpr (tutti::has_reduce_scatter<A, C>)
      section("reduce_scatter",
              [&] { for_each_reduction([&]<class T>(op o, std::size_t n) { reduce_scatter<T>(o, n); }); });
    else skipped("reduce_scatter");
    if constexpr (tutti::has_allgather<A, C>)
      section("allgather", [&] { for_each_movement([&]<class T>(std::size_t n) { allgather<T>(n); }); });
    else skipped("allgather");
    if constexpr (tutti::has_broadcast<A, C>)
      section("broadcast", [&] {
        for (int root : roots_for(broadcast_roots, n_))
          for_each_movement([&]<class T>(std::size_t n) { broadcast<T>(n, root); });
      });
    else skipped("broadcast");
    if constexpr (tutti::has_reduce<A, C>)
      section("reduce", [&] {
        for (int root : roots_for(reduce_roots, n_))
          for_each_reduction([&]<class T>(op o, std::size_t n) { reduce<T>(o, n, root); });
      });
    else skipped("reduce");
    if constexpr (tutti::has_alltoall<A, C>)
      section("alltoall", [&] { for_each_movement([&]<class T>(std::size_t n) { alltoall<T>(n); }); });
    else skipped("alltoall");
    return failures_;
  }

 private:
  void skipped(std::string_view collective) const {
    if (r_ == 0)
      print_line("tutti-mpi: " + std::string(name_) + ": " + std::string(collective) +
                 ": skipped (the algorithm does not implement it)");
  }

  template <class F>
  void section(std::string_view collective, F&& body) {
    const auto start = std::chrono::steady_clock::now();
    const std::size_t cases_before = cases_, failures_before = failures_;
    rounding_ = {};
    body();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r_ == 0) {
      char b[256];
      int len = std::snprintf(b, sizeof b, ": %zu cases, %.1f s, %zu mismatching elements on rank 0",
                              cases_ - cases_before, seconds, failures_ - failures_before);
      if (rounding_.differing)
        std::snprintf(b + len, sizeof b - static_cast<std::size_t>(len),
                      " (%zu floating-point elements differ from MPI within the bound, the largest at %.2g of it)",
                      rounding_.differing, rounding_.worst);
      print_line("tutti-mpi: " + std::string(name_) + ": " + std::string(collective) + b);
    }
  }

  template <class F>
  void for_each_reduction(F&& fn) {
    for_each_type([&]<class T>(std::type_identity<T>) {
      for (op o : ops)
        for (std::size_t count : counts) fn.template operator()<T>(o, count);
    });
  }
  template <class F>
  void for_each_movement(F&& fn) {
    for_each_type([&]<class T>(std::type_identity<T>) {
      for (std::size_t count : counts) fn.template operator()<T>(count);
    });
  }

  template <class T>
  case_info describe(std::string_view collective, const op* o, std::size_t count, bool in_place, int root = -1) {
    return case_info{name_, collective, tutti::dtype_of<T>, o, count, in_place, root};
  }

  //! Records the case (for an exception's message) and counts it.
  void begin(const case_info& c) {
    current_ = c.text();
    ++cases_;
  }

  template <class T>
  std::uint64_t seed(which w, op o, std::size_t count, int root = -1) const {
    return seed_of({static_cast<std::uint64_t>(r_), static_cast<std::uint64_t>(w), static_cast<std::uint64_t>(o),
                    static_cast<std::uint64_t>(tutti::dtype_of<T>), count, static_cast<std::uint64_t>(root + 1)});
  }

  //! S'_i = sum over ranks of |x_i| (double), for floating sum and avg; empty otherwise.
  template <class T>
  std::vector<double> abs_sums(const std::vector<T>& in, op o) const {
    if constexpr (!std::is_floating_point_v<T>) {
      return {};
    } else {
      if (o != op::sum && o != op::avg) return {};
      std::vector<double> a(in.size()), s(in.size());
      for (std::size_t i = 0; i < in.size(); ++i) a[i] = std::fabs(static_cast<double>(in[i]));
      MPI_Allreduce(a.data(), s.data(), static_cast<int>(in.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      return s;
    }
  }

  template <class T>
  void allreduce(op o, std::size_t count) {
    const std::vector<T> in = draw_input<T>(seed<T>(which::allreduce, o, count), o, count);
    std::vector<T> ref(count);
    MPI_Allreduce(in.data(), ref.data(), static_cast<int>(count), mpi_type<T>(), mpi_op(o), MPI_COMM_WORLD);
    const std::vector<double> s = abs_sums(in, o);
    for (bool in_place : {false, true}) {
      const case_info c = describe<T>("allreduce", &o, count, in_place);
      begin(c);
      std::vector<T> out;
      if (in_place) {
        out = in;
        comm_.allreduce(view(out), o);
      } else {
        std::vector<T> send = in;
        out = poisoned<T>(count);
        comm_.allreduce(cview(send), view(out), o);
        failures_ += unchanged(c, "input changed:", send.data(), in.data(), count);
      }
      failures_ += compare_reduced(c, n_, out.data(), ref.data(), s.empty() ? nullptr : s.data(), rounding_);
    }
  }

  template <class T>
  void reduce_scatter(op o, std::size_t count) {
    const std::size_t total = count * static_cast<std::size_t>(n_), mine = count * static_cast<std::size_t>(r_);
    const std::vector<T> in = draw_input<T>(seed<T>(which::reduce_scatter, o, count), o, total);
    std::vector<T> ref(count);
    MPI_Reduce_scatter_block(in.data(), ref.data(), static_cast<int>(count), mpi_type<T>(), mpi_op(o),
                             MPI_COMM_WORLD);
    const std::vector<double> s = abs_sums(in, o);
    for (bool in_place : {false, true}) {
      const case_info c = describe<T>("reduce_scatter", &o, count, in_place);
      begin(c);
      std::vector<T> buf = in;  // in place: the result replaces this rank's block
      std::vector<T> out;
      const T* result = buf.data() + mine;
      if (in_place) {
        comm_.reduce_scatter(cview(buf), view(buf, mine, count), o);
      } else {
        out = poisoned<T>(count);
        comm_.reduce_scatter(cview(buf), view(out), o);
        failures_ += unchanged(c, "input changed:", buf.data(), in.data(), total);
        result = out.data();
      }
      failures_ += compare_reduced(c, n_, result, ref.data(), s.empty() ? nullptr : s.data() + mine, rounding_);
    }
  }

  template <class T>
  void allgather(std::size_t count) {
    const std::size_t total = count * static_cast<std::size_t>(n_), mine = count * static_cast<std::size_t>(r_);
    const std::vector<T> in = draw_input<T>(seed<T>(which::allgather, op::sum, count), op::sum, count);
    std::vector<T> ref = poisoned<T>(total);
    MPI_Allgather(in.data(), static_cast<int>(count), mpi_type<T>(), ref.data(), static_cast<int>(count),
                  mpi_type<T>(), MPI_COMM_WORLD);
    for (bool in_place : {false, true}) {
      const case_info c = describe<T>("allgather", nullptr, count, in_place);
      begin(c);
      std::vector<T> out = poisoned<T>(total);
      if (in_place) {
        if (count) std::memcpy(out.data() + mine, in.data(), count * sizeof(T));
        comm_.allgather(cview(out, mine, count), view(out));
      } else {
        std::vector<T> send = in;
        comm_.allgather(cview(send), view(out));
        failures_ += unchanged(c, "input changed:", send.data(), in.data(), count);
      }
      failures_ += compare_exact(c, "output", out.data(), ref.data(), total);
    }
  }

  template <class T>
  void broadcast(std::size_t count, int root) {
    const bool is_root = r_ == root;
    // Every rank draws its own data; only root's may arrive anywhere.
    const std::vector<T> in = draw_input<T>(seed<T>(which::broadcast, op::sum, count, root), op::sum, count);
    std::vector<T> ref = is_root ? in : poisoned<T>(count);
    MPI_Bcast(ref.data(), static_cast<int>(count), mpi_type<T>(), root, MPI_COMM_WORLD);
    for (bool in_place : {false, true}) {
      const case_info c = describe<T>("broadcast", nullptr, count, in_place, root);
      begin(c);
      std::vector<T> out;
      if (in_place) {
        out = is_root ? in : poisoned<T>(count);
        comm_.broadcast(view(out), root);
      } else {
        std::vector<T> send = in;  // off root: must be ignored, and left alone
        out = poisoned<T>(count);
        comm_.broadcast(cview(send), view(out), root);
        failures_ += unchanged(c, "input changed:", send.data(), in.data(), count);
      }
      failures_ += compare_exact(c, "output", out.data(), ref.data(), count);
    }
  }

  template <class T>
  void reduce(op o, std::size_t count, int root) {
    const bool is_root = r_ == root;
    const std::vector<T> in = draw_input<T>(seed<T>(which::reduce, o, count, root), o, count);
    std::vector<T> ref(is_root ? count : 0);
    MPI_Reduce(in.data(), is_root ? ref.data() : nullptr, static_cast<int>(count), mpi_type<T>(), mpi_op(o), root,
               MPI_COMM_WORLD);
    const std::vector<double> s = abs_sums(in, o);
    for (bool in_place : {false, true}) {
      const case_info c = describe<T>("reduce", &o, count, in_place, root);
      begin(c);
      std::vector<T> buf = in;
      if (in_place) {
        // Off root the same call: in == out, and out is never written there.
        comm_.reduce(view(buf), o, root);
        if (is_root)
          failures_ += compare_reduced(c, n_, buf.data(), ref.data(), s.empty() ? nullptr : s.data(), rounding_);
        else
          failures_ += unchanged(c, "non-root buffer changed:", buf.data(), in.data(), count);
      } else if (is_root) {
        std::vector<T> out = poisoned<T>(count);
        comm_.reduce(cview(buf), view(out), o, root);
        failures_ += unchanged(c, "input changed:", buf.data(), in.data(), count);
        failures_ += compare_reduced(c, n_, out.data(), ref.data(), s.empty() ? nullptr : s.data(), rounding_);
      } else {
        comm_.reduce(cview(buf), tutti::tensor_view(nullptr, 0, tutti::dtype_of<T>), o, root);
        failures_ += unchanged(c, "input changed:", buf.data(), in.data(), count);
      }
    }
  }

  template <class T>
  void alltoall(std::size_t count) {
    const std::size_t total = count * static_cast<std::size_t>(n_);
    const std::vector<T> in = draw_input<T>(seed<T>(which::alltoall, op::sum, count), op::sum, total);
    std::vector<T> ref = poisoned<T>(total);
    MPI_Alltoall(in.data(), static_cast<int>(count), mpi_type<T>(), ref.data(), static_cast<int>(count),
                 mpi_type<T>(), MPI_COMM_WORLD);
    for (bool in_place : {false, true}) {
      const case_info c = describe<T>("alltoall", nullptr, count, in_place);
      begin(c);
      std::vector<T> out;
      if (in_place) {
        out = in;
        comm_.alltoall(view(out));
      } else {
        std::vector<T> send = in;
        out = poisoned<T>(total);
        comm_.alltoall(cview(send), view(out));
        failures_ += unchanged(c, "input changed:", send.data(), in.data(), total);
      }
      failures_ += compare_exact(c, "output (block j came from rank j)", out.data(), ref.data(), total);
    }
  }

 public:
  [[nodiscard]] const std::string& current_case() const noexcept { return current_; }
  [[nodiscard]] std::size_t cases() const noexcept { return cases_; }

 private:
  communicator_type& comm_;
  std::string_view name_;
  int r_ = world_rank(), n_ = world_size();
  std::size_t cases_ = 0, failures_ = 0;
  rounding_stats rounding_;
  std::string current_ = "creating the communicator";
};

//! Runs every case for Algorithm; returns the mismatching elements summed over all ranks. An
//! exception from tutti aborts the job at once, naming the case.
template <class Algorithm>
std::size_t run_algorithm(std::string_view name) {
  using communicator_type = typename differential<Algorithm>::communicator_type;
  std::string where = "creating the communicator";
  std::size_t mine = 0, cases = 0;
  const auto start = std::chrono::steady_clock::now();
  try {
    auto comm = communicator_type::from_env();
    differential<Algorithm> d(comm, name);
    try {
      mine = d.run();
      cases = d.cases();
    } catch (...) {
      where = d.current_case();
      throw;
    }
  } catch (const std::exception& e) {
    print_line("tutti-mpi: rank " + std::to_string(world_rank()) + ": " + std::string(name) + ": " + where +
               ": tutti threw: " + e.what());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  unsigned long long local = mine, total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank() == 0) {
    char b[200];
    std::snprintf(b, sizeof b, "tutti-mpi: %.*s: %s: %zu cases per rank on %d ranks, %.1f s, %llu mismatching elements",
                  static_cast<int>(name.size()), name.data(), total ? "FAILED" : "passed", cases, world_size(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), total);
    print_line(b);
  }
  return total;
}

//! Simulated nodes, for algorithms that group ranks by TUTTI_NODE_ID (read when the transport is
//! made): two nodes, the lower half of the ranks on "a"; with an odd world, where halves cannot be
//! equal (hierarchical refuses uneven nodes), one node per rank.
template <class Algorithm>
std::size_t run_on_two_nodes(std::string_view name) {
  const int r = world_rank(), n = world_size();
  const std::string node = n % 2 ? "node" + std::to_string(r) : (r < n / 2 ? "a" : "b");
  ::setenv("TUTTI_NODE_ID", node.c_str(), 1);
  const std::size_t failures = run_algorithm<Algorithm>(name);
  ::unsetenv("TUTTI_NODE_ID");
  return failures;
}

namespace algo = tutti::algorithm;

struct algorithm_entry {
  std::string_view name;
  std::size_t (*run)(std::string_view);
};

// One line per algorithm: {"name", &run_algorithm<...>} (CMakeLists.txt reads the names from lines
// of this shape and registers the test mpi.differential.<name>).
constexpr algorithm_entry algorithms[] = {
    {"ring", &run_algorithm<algo::ring>},
    {"direct", &run_algorithm<algo::direct>},
    {"hierarchical", &run_on_two_nodes<algo::hierarchical<algo::ring, algo::ring>>},
    {"tree", &run_algorithm<algo::tree>},
    {"hierarchical_tree", &run_on_two_nodes<algo::hierarchical<algo::tree, algo::ring>>},  // no intra reduce-scatter
    {"halving_doubling", &run_algorithm<algo::halving_doubling>},
    {"hierarchical_direct", &run_on_two_nodes<algo::hierarchical<algo::direct, algo::ring>>},  // one-sided inside nodes
};

}  // namespace

//! Open MPI 4.1's op/avx component adds 8- and 16-bit integers with saturating instructions
//! (`OP_AVX_FUNC(sum, i, 8, int8_t, adds)` in ompi/mca/op/avx/op_avx_functions.c; only its
//! scalar tail wraps), so its MPI_SUM on int8/uint8 is not the wrapping sum MPI's C semantics and
//! tutti define. main() deselects that component (OMPI_MCA_op=^avx, unless the caller set
//! OMPI_MCA_op) so the reference is Open MPI's base C loops; this probe refuses a reference that
//! still saturates rather than report tutti wrong.
bool reference_wraps_8bit_sums() {
  const int n = world_size();
  if (n == 1) return true;
  std::vector<std::uint8_t> in(256, 200), out(256);  // long enough for any SIMD path
  MPI_Allreduce(in.data(), out.data(), static_cast<int>(in.size()), MPI_UNSIGNED_CHAR, MPI_SUM, MPI_COMM_WORLD);
  const auto expected = static_cast<std::uint8_t>(200u * static_cast<unsigned>(n));
  for (auto v : out)
    if (v != expected) return false;
  return true;
}

int main(int argc, char** argv) {
  ::setenv("OMPI_MCA_op", "^avx", 0);  // read by MPI_Init; see reference_wraps_8bit_sums()
  MPI_Init(&argc, &argv);
  const bool lead = world_rank() == 0;
  if (!reference_wraps_8bit_sums()) {
    if (lead)
      print_line("tutti-mpi: Open MPI's MPI_SUM on unsigned char saturates instead of wrapping (op/avx component?); "
                 "the reference is unusable: run with OMPI_MCA_op=^avx");
    MPI_Finalize();
    return 2;
  }
  std::vector<std::string_view> wanted(argv + 1, argv + argc);
  if (wanted.empty())
    for (const auto& a : algorithms) wanted.push_back(a.name);

  std::size_t failures = 0;
  int ran = 0, bad_usage = 0;
  for (std::string_view name : wanted) {
    const algorithm_entry* entry = nullptr;
    for (const auto& a : algorithms)
      if (a.name == name) entry = &a;
    if (!entry) {
      if (lead) {
        std::string known;
        for (const auto& a : algorithms) {  // piece by piece: GCC 12 -O3 warns (-Wrestrict) on " " + string
          known += ' ';
          known += a.name;
        }
        print_line("tutti-mpi: unknown algorithm '" + std::string(name) + "'; known:" + known);
      }
      bad_usage = 1;
    } else {
      failures += entry->run(name);
      ++ran;
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  MPI_Finalize();
  if (bad_usage) return 2;
  if (failures) return 1;
  return ran == 0 ? 2 : 0;
}
