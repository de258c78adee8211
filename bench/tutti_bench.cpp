//! @file tutti_bench.cpp  tutti-bench: an nccl-tests-style size sweep of one collective.
//!
//! Flags and the printed table follow nccl-tests (-b -e -i -f -t -g -n -w -m -a -c -z -d -o -r -R
//! -T with nccl-tests' meanings; out-of-place and in-place side by side: time, algbw, busbw,
//! #wrong), so numbers compare with what users already know. tutti's own options are long:
//! --transport (inproc: -t ranks are threads of this process; shm: this process is one rank of a
//! job started by a launcher, the default under one), --collective, --algorithm, --codec (a lossy
//! wire format for float allreduce), --ranks-per-node (simulated nodes, inproc) and --membw (the
//! machine's memcpy bandwidth as a reference). Time is each rank's mean time per collective,
//! aggregated over ranks as -a says (default: the mean).
//!
//! This file holds the program: the per-rank loop, one runner per (transport, algorithm) — and per
//! codec for the few pairs that carry one — and main.
//! The flags, the table, the expected values and the buffers live in bench/support/.
//!
//! Build on its own:  g++ -std=c++20 -O3 -Iinclude bench/tutti_bench.cpp -o tutti-bench -pthread
//! Adding an algorithm: include it and add one line per transport to `runners` below.
#include <tutti/tutti.hpp>
#include <tutti/algorithm/halving_doubling.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/tree.hpp>
#include <tutti/algorithm/tuned_sets.hpp>
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
#include <tutti/transport/multi_node.hpp>
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "support/buffers.hpp"
#include "support/expected.hpp"
#include "support/heap_allocations.hpp"
#include "support/membw.hpp"
#include "support/options.hpp"
#include "support/table.hpp"

namespace {

using namespace bench;
using tutti::dtype;
using tutti::op;
using inproc = tutti::transport::inproc;
using shm = tutti::transport::shm;

// ---- the communicator as the sweep sees it ----------------------------------------------------

//! One rank's communicator behind a virtual interface. The sweep loop, the buffers and the checks
//! (a visit over every dtype for every collective) are then compiled once, not once per
//! (transport, algorithm) runner: only `call` and the communicator itself are per runner, which
//! keeps tutti-bench's compile time in check as algorithms are added. The indirect call costs
//! nanoseconds per iteration; the smallest collective takes microseconds.
class bench_comm {
 public:
  virtual ~bench_comm() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  //! The measured collective; `out` is ignored off root by reduce.
  virtual void call(collective_kind k, const tutti::const_tensor_view& in, const tutti::tensor_view& out, op o,
                    int root) = 0;
  virtual void barrier() = 0;
  //! The per-row figures (f64, in place; sum, min or max), exact whatever the codec.
  virtual void allreduce(double* data, std::size_t count, op o) = 0;
  //! `bytes` of the transport's registered memory; only called when the transport has some (-R 1 needs --transport shm).
  [[nodiscard]] virtual buffer registered(std::size_t bytes, int fill) = 0;
};

template <class Transport>
constexpr bool has_registered_memory = requires(Transport& t, std::size_t n, void* p) {
  t.allocate(n);
  t.deallocate(p);
};

template <class Comm>
class comm_adapter final : public bench_comm {
  static constexpr bool lossless = Comm::codec_type::lossless;

 public:
  explicit comm_adapter(Comm& comm) : comm_(comm) {
    if constexpr (!lossless) gathered_.resize(2 * static_cast<std::size_t>(comm.size()));  // time_mode's largest
  }
  [[nodiscard]] int rank() const override { return comm_.rank(); }
  [[nodiscard]] int size() const override { return comm_.size(); }

  void call(collective_kind k, const tutti::const_tensor_view& in, const tutti::tensor_view& out, op o,
            int root) override {
    using algorithm = typename Comm::algorithm_type;
    using context = typename Comm::context_type;
    if constexpr (!lossless) {  // parse() refused every other collective with a lossy --codec
      (void)k, (void)root;
      comm_.allreduce(in, out, o);
    } else {
      // Collectives the algorithm lacks were refused before the sweep (require_collective).
      switch (k) {
        case collective_kind::allreduce:
          if constexpr (tutti::has_allreduce<algorithm, context>) comm_.allreduce(in, out, o);
          break;
        case collective_kind::reduce_scatter:
          if constexpr (tutti::has_reduce_scatter<algorithm, context>) comm_.reduce_scatter(in, out, o);
          break;
        case collective_kind::allgather:
          if constexpr (tutti::has_allgather<algorithm, context>) comm_.allgather(in, out);
          break;
        case collective_kind::broadcast:
          if constexpr (tutti::has_broadcast<algorithm, context>) comm_.broadcast(in, out, root);
          break;
        case collective_kind::reduce:
          if constexpr (tutti::has_reduce<algorithm, context>) comm_.reduce(in, out, o, root);
          break;
        case collective_kind::alltoall:
          if constexpr (tutti::has_alltoall<algorithm, context>) comm_.alltoall(in, out);
          break;
      }
    }
  }

  void barrier() override { comm_.barrier(); }
  void allreduce(double* data, std::size_t count, op o) override {
    if constexpr (lossless) {
      comm_.allreduce(tutti::tensor_view(data, count, dtype::f64), o);
    } else {
      // A lossy codec carries float sums only (doubles, min and max are refused): gather every
      // rank's figures, exactly, and reduce them here in rank order, the same on every rank.
      const auto n = static_cast<std::size_t>(comm_.size());
      comm_.allgather(tutti::const_tensor_view(data, count, dtype::f64),
                      tutti::tensor_view(gathered_.data(), count * n, dtype::f64));
      for (std::size_t i = 0; i < count; ++i) {
        double acc = gathered_[i];
        for (std::size_t p = 1; p < n; ++p) {
          const double v = gathered_[p * count + i];
          acc = o == op::min ? std::min(acc, v) : o == op::max ? std::max(acc, v) : acc + v;
        }
        data[i] = acc;
      }
    }
  }

  [[nodiscard]] buffer registered(std::size_t bytes, int fill) override {
    using transport = typename Comm::transport_type;
    if constexpr (has_registered_memory<transport>) return buffer::registered(comm_.transport(), bytes, fill);
    else throw usage_error{"-R 1: this transport has no registered memory"};
  }

 private:
  Comm& comm_;
  std::vector<double> gathered_;  //!< lossy codecs: every rank's figures (allocated here, not per row)
};

// ---- one rank ------------------------------------------------------------------------------

//! Buffer sizes for the largest row: send (0 when in place) and recv.
struct buffer_sizes {
  std::size_t send;
  std::size_t recv;
};

buffer_sizes buffer_sizes_of(const options& o, std::size_t max_size) {
  const row_shape big = shape_of(o, max_size);
  const std::size_t per_rank = big.count * tutti::size_of(o.type);
  // Out of place: send holds this rank's input (the whole buffer except for allgather), recv the
  // output (everything except for reduce_scatter; reduce's is read on root only). In place: one
  // buffer of the total size.
  // Both are made: every row runs out of place, then in place in recv.
  const bool gather = o.coll->kind == collective_kind::allgather;
  return {gather ? per_rank : big.bytes, big.bytes};
}

//! One rank's sweep: warm-up, then per row and per mode (out of place, in place) warm-up, barrier,
//! timed loop, checked iteration, and two small allreduces that give every rank the row's figures
//! (time aggregated as -a says; wrong and allocations summed). Rank 0 prints.
class rank_bench {
 public:
  rank_bench(bench_comm& comm, const options& o, std::size_t max_size, double membw_gbs)
      : comm_(comm), o_(o), n_(comm.size()), r_(comm.rank()), esz_(tutti::size_of(o.type)), membw_(membw_gbs),
        lossy_(lossy_expected(o.codec, n_, o.reduction)) {
    if (o.codec != codec_kind::none && o.check) {
      sum_.largest_error = 0;
      sum_.largest_bound = lossy_.largest_bound;
    }
    const buffer_sizes b = buffer_sizes_of(o, max_size);
    recv_ = make_buffer(b.recv, 0);
    send_ = make_buffer(b.send, 0);
    tutti::visit(o.type, [&]<class T>(std::type_identity<T>) {
      fill<T>(send_.get(), b.send / esz_, input_table<T>(r_, o.reduction));
    });
  }

  void run(const std::vector<std::size_t>& sizes) {
    warm_up(sizes.back());  // like nccl-tests: once at the largest size before the sweep
    for (std::size_t size : sizes) run_row(size);
  }

  [[nodiscard]] const summary& totals() const noexcept { return sum_; }

 private:
  buffer make_buffer(std::size_t bytes, int fill) {
    return o_.registered ? comm_.registered(bytes, fill) : buffer::heap(bytes, fill);
  }

  //! Grows the library's scratch and lets the scheduler settle the ranks before any row.
  void warm_up(std::size_t size) {
    set_views(shape_of(o_, size));
    for (int i = 0; i < o_.warmup; ++i) call();
  }

  void run_row(std::size_t size) {
    const row_shape s = shape_of(o_, size);
    row_result rows[2];
    for (int mode = 0; mode < 2; ++mode) {
      in_place_ = mode == 1;
      rows[mode] = time_mode(s);
    }
    in_place_ = false;
    if (r_ == 0) {
      print_row(o_, s, rows, membw_, sum_);
    } else {  // the same totals on every rank, for the exit status
      for (const auto& row : rows) {
        sum_.wrong += row.wrong;
        sum_.allocations += row.allocations;
        ++sum_.rows;
      }
    }
  }

  row_result time_mode(const row_shape& s) {
    set_views(s);
    for (int i = 0; i < o_.warmup; ++i) call();
    comm_.barrier();
    const std::uint64_t allocs_before = heap_allocations;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o_.iters; ++i)
      for (int m = 0; m < o_.agg_iters; ++m) call();
    const auto t1 = std::chrono::steady_clock::now();
    const double allocations = static_cast<double>(heap_allocations - allocs_before);
    double time_us =
        std::chrono::duration<double, std::micro>(t1 - t0).count() / (static_cast<double>(o_.iters) * o_.agg_iters);
    double counts[2] = {o_.check ? static_cast<double>(checked_iteration(s)) : 0.0, allocations};
    switch (o_.average) {  // every rank takes part, so the collective sequence stays the same on all
      case average_kind::rank0: {
        double mine[1] = {r_ == 0 ? time_us : 0.0};
        comm_.allreduce(mine, 1, op::sum);
        time_us = mine[0];
        break;
      }
      case average_kind::mean:
        comm_.allreduce(&time_us, 1, op::sum);
        time_us /= n_;
        break;
      case average_kind::min: comm_.allreduce(&time_us, 1, op::min); break;
      case average_kind::max: comm_.allreduce(&time_us, 1, op::max); break;
    }
    comm_.allreduce(counts, 2, op::sum);
    if (o_.codec != codec_kind::none && o_.check) {  // every rank has the same codec: the same collectives
      double error[1] = {checked_error_};
      comm_.allreduce(error, 1, op::max);
      sum_.largest_error = std::max(sum_.largest_error, error[0]);
    }
    return {time_us, counts[0], counts[1]};
  }

  void set_views(const row_shape& s) {
    const std::size_t per_rank_bytes = s.count * esz_;
    const std::size_t own = static_cast<std::size_t>(r_) * per_rank_bytes;
    const std::size_t all = s.count * static_cast<std::size_t>(n_);
    std::byte* recv = recv_.get();
    const std::byte* send = in_place_ ? recv : send_.get();
    switch (o_.coll->kind) {
      case collective_kind::allreduce:
      case collective_kind::broadcast:
      case collective_kind::reduce:
        in_ = {send, s.count, o_.type};
        out_ = {recv, s.count, o_.type};
        break;
      case collective_kind::reduce_scatter:
        in_ = {send, all, o_.type};
        out_ = {in_place_ ? recv + own : recv, s.count, o_.type};
        break;
      case collective_kind::allgather:
        in_ = {in_place_ ? recv + own : send, s.count, o_.type};
        out_ = {recv, all, o_.type};
        break;
      case collective_kind::alltoall:
        in_ = {send, all, o_.type};
        out_ = {recv, all, o_.type};
        break;
    }
  }

  void call() { comm_.call(o_.coll->kind, in_, out_, o_.reduction, o_.root); }

  //! Resets inputs the timed loop may have overwritten (in place), poisons the output, runs one
  //! more iteration and counts wrong elements. Untimed.
  std::size_t checked_iteration(const row_shape& s) {
    if (o_.codec != codec_kind::none) return checked_lossy_iteration(s);
    return tutti::visit(o_.type, [&]<class T>(std::type_identity<T>) -> std::size_t {
      const op o = o_.reduction;
      const auto n = static_cast<std::size_t>(n_);
      const std::size_t own_first = static_cast<std::size_t>(r_) * s.count;  // in elements
      std::memset(out_.data, 0xA5, out_.bytes());
      if (in_place_) {
        switch (o_.coll->kind) {
          case collective_kind::allreduce:
          case collective_kind::reduce:  // every rank's input is recv
            fill<T>(recv_.get(), s.count, input_table<T>(r_, o));
            break;
          case collective_kind::reduce_scatter:
          case collective_kind::alltoall: fill<T>(recv_.get(), s.count * n, input_table<T>(r_, o)); break;
          case collective_kind::allgather:
            fill<T>(recv_.get() + own_first * esz_, s.count, input_table<T>(r_, o));
            break;
          case collective_kind::broadcast:
            if (r_ == o_.root) fill<T>(recv_.get(), s.count, input_table<T>(r_, o));
            break;
        }
      }
      call();
      const auto* out = static_cast<const std::byte*>(out_.data);
      switch (o_.coll->kind) {
        case collective_kind::allreduce: return count_wrong<T>(out, s.count, reduced_table<T>(n_, o));
        case collective_kind::reduce:
          return r_ == o_.root ? count_wrong<T>(out, s.count, reduced_table<T>(n_, o)) : 0;
        case collective_kind::reduce_scatter: return count_wrong<T>(out, s.count, reduced_table<T>(n_, o), own_first);
        case collective_kind::allgather:
        case collective_kind::alltoall: {
          // allgather: block p is rank p's input; alltoall: block p is block r_ of rank p's input,
          // which rank p filled from element 0 on, so it starts at pattern index own_first.
          const std::size_t first = o_.coll->kind == collective_kind::alltoall ? own_first : 0;
          std::size_t wrong = 0;
          for (int p = 0; p < n_; ++p)
            wrong += count_wrong<T>(out + static_cast<std::size_t>(p) * s.count * esz_, s.count, input_table<T>(p, o),
                                    first);
          return wrong;
        }
        case collective_kind::broadcast: return count_wrong<T>(out, s.count, input_table<T>(o_.root, o));
      }
      return 0;
    });
  }

  //! A lossy codec's allreduce (float, sum or avg): each element within the codec's bound of the
  //! exact result. Poisoned with NaN, which no bound accepts: an element never written counts.
  std::size_t checked_lossy_iteration(const row_shape& s) {
    std::memset(out_.data, 0xFF, out_.bytes());
    if (in_place_) fill<float>(recv_.get(), s.count, input_table<float>(r_, o_.reduction));
    call();
    checked_error_ = largest_error(out_.data, s.count, lossy_);
    return count_outside(out_.data, s.count, lossy_);
  }

  bench_comm& comm_;
  const options& o_;
  int n_, r_;
  std::size_t esz_;
  double membw_;
  lossy_expectation lossy_;  //!< --codec fp16|bf16|int8: the exact results and their bounds
  double checked_error_ = 0;  //!< the last checked iteration's largest |result - exact| (lossy codecs)
  buffer send_, recv_;  //!< registered ones go back to the communicator's transport: destroy *this first
  bool in_place_ = false;  //!< the mode being timed: the row's second pass
  tutti::const_tensor_view in_;
  tutti::tensor_view out_;
  summary sum_;
};

// ---- one runner per transport and algorithm ---------------------------------------------------------

template <class Algorithm, class Transport>
bool implements(collective_kind k) {
  using context = tutti::algorithm::context<Transport>;
  switch (k) {
    case collective_kind::allreduce: return tutti::has_allreduce<Algorithm, context>;
    case collective_kind::reduce_scatter: return tutti::has_reduce_scatter<Algorithm, context>;
    case collective_kind::allgather: return tutti::has_allgather<Algorithm, context>;
    case collective_kind::broadcast: return tutti::has_broadcast<Algorithm, context>;
    case collective_kind::reduce: return tutti::has_reduce<Algorithm, context>;
    case collective_kind::alltoall: return tutti::has_alltoall<Algorithm, context>;
  }
  return false;
}

template <class Algorithm, class Transport>
void require_collective(const options& o) {
  // The per-row figures travel by allreduce and each row starts with a barrier, whatever
  // collective is measured.
  using context = tutti::algorithm::context<Transport>;
  static_assert(tutti::has_allreduce<Algorithm, context> && tutti::has_barrier<Algorithm, context>,
                "tutti-bench gathers each row's figures with allreduce and starts it with a barrier: the Algorithm "
                "must implement both");
  if (implements<Algorithm, Transport>(o.coll->kind)) return;
  std::string has;
  for (const auto& c : collectives)
    if (implements<Algorithm, Transport>(c.kind)) has += (has.empty() ? "" : ", ") + std::string(c.name);
  throw usage_error{"--algorithm " + o.algorithm + " does not implement " + std::string(o.coll->name) + " (it implements " +
                    has + ", barrier)"};
}

//! TUTTI_* settings, with -T (nccl-tests' timeout, in seconds) over TUTTI_TIMEOUT when given.
tutti::communicator_options communicator_options_for(const options& o) {
  auto c = tutti::communicator_options::from_env();
  if (o.timeout_s > 0)
    c.timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(o.timeout_s));
  return c;
}

void print_rank_errors(const std::vector<std::exception_ptr>& errors, int& failed) {
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
}

//! --transport inproc: every rank a thread of this process; rank 0's thread prints.
template <class Algorithm, class Codec = tutti::codec::none>
int run_inproc(options o) {
  using comm_t = tutti::communicator<inproc, Algorithm, Codec>;
  require_collective<Algorithm, inproc>(o);
  const tutti::communicator_options copt = communicator_options_for(o);  // throws on bad TUTTI_*
  const std::vector<std::size_t> sizes = sizes_of(o);
  const double membw = o.membw ? memcpy_bandwidth_gbs() : 0.0;
  std::vector<std::string> node_ids;  // -K: rank r on simulated node r/K
  for (int r = 0; o.ranks_per_node && r < o.ranks; ++r) node_ids.push_back("sim" + std::to_string(r / o.ranks_per_node));
  header_info h{inproc::name, "threads", o.algorithm, copt, membw, {}};
  h.notes.push_back(o.ranks_per_node ? "nodes: simulated, " + std::to_string(o.ranks_per_node) + " ranks each (--ranks-per-node)"
                                     : std::string("nodes: one (--ranks-per-node K simulates nodes of K ranks)"));
  print_header(o, h);

  summary sum;
  auto errors = inproc::run(
      o.ranks,
      [&](inproc& t) {
        comm_t comm(t, copt);
        comm_adapter<comm_t> adapter(comm);
        rank_bench bench(adapter, o, sizes.back(), membw);
        bench.run(sizes);
        if (comm.rank() == 0) sum = bench.totals();
      },
      std::move(node_ids));

  int failed = 0;
  print_rank_errors(errors, failed);
  if (failed) return 1;
  print_footer(sum);
  return sum.wrong == 0 ? 0 : 1;
}

//! What run_shm checks and prints before the bootstrap; the same for every algorithm.
struct shm_setup {
  tutti::rank_info info;
  tutti::communicator_options copt;
  tutti::transport::shm_options sopt;
  std::vector<std::size_t> sizes;
};

shm_setup prepare_shm(options& o) {
  // Everything that can be refused is refused before the bootstrap, which waits for all ranks.
  shm_setup s{tutti::rank_info_from_env(), {}, {}, {}};
  const tutti::rank_info& info = s.info;
  if (o.ranks_given && o.ranks != info.world_size) {
    const std::string started = info.launcher == "none"
                                    ? "no launcher started this one (no TUTTI_RANK, TUTTI_WORLD_SIZE)"
                                    : "the launcher (" + info.launcher + ") started " + std::to_string(info.world_size) +
                                          " (TUTTI_WORLD_SIZE)";
    throw usage_error{"-t " + std::to_string(o.ranks) + ": with --transport shm every process is one rank, and " + started +
                      "; leave -t out or start with tutti-run -n " + std::to_string(o.ranks) + " -- tutti-bench ..."};
  }
  o.ranks = info.world_size;
  check_root(o, "tutti-run -n");
  s.copt = communicator_options_for(o);
  s.sopt = tutti::transport::shm_options::from_env();
  s.sizes = sizes_of(o);
  if (o.registered) {
    const buffer_sizes b = buffer_sizes_of(o, s.sizes.back());
    const auto rounded = [](std::size_t n) { return (std::max<std::size_t>(n, 1) + 63) / 64 * 64; };
    const std::size_t need = rounded(b.recv) + rounded(b.send);
    if (need > s.sopt.pool_bytes)
      throw usage_error{"-R 1: the buffers need " + std::to_string(need) + " bytes of registered memory per rank, but "
                        "TUTTI_SHM_POOL_BYTES is " + std::to_string(s.sopt.pool_bytes) + "; raise it (e.g. "
                        "TUTTI_SHM_POOL_BYTES=" + std::to_string((need + (std::size_t{1} << 30) - 1) >> 30) + "G)"};
  }
  if (info.rank == 0 && info.launcher == "none")
    std::fprintf(stderr, "tutti-bench: note: no launcher variables (TUTTI_RANK, TUTTI_WORLD_SIZE): running as a world "
                         "of 1; start N ranks with tutti-run -n N -- tutti-bench ...\n");
  return s;
}

void print_shm_header(const options& o, const shm_setup& s, double membw) {
  header_info h{shm::name, "processes", o.algorithm, s.copt, membw, {}};
  h.notes.push_back("launcher " + s.info.launcher + "  job " + s.info.job_id);
  h.notes.push_back("nodes: rank 0 is local rank " + std::to_string(s.info.local_rank) + " of " +
                    std::to_string(s.info.local_size) + " on node " + s.info.node_id +
                    " (tutti-run --ranks-per-node K simulates nodes)");
  h.notes.push_back("shm: slots " + std::to_string(s.sopt.slots) + " x " + std::to_string(s.sopt.slot_bytes) +
                    " B (TUTTI_SHM_SLOTS, TUTTI_SHM_SLOT_BYTES)  stage 2 x " + std::to_string(s.sopt.stage_bytes) +
                    " B (TUTTI_SHM_STAGE_BYTES)  pool " + std::to_string(s.sopt.pool_bytes) + " B (TUTTI_SHM_POOL_BYTES)");
  h.notes.push_back(o.registered ? "buffers: registered (transport allocate(): one-sided algorithms read the input in place)"
                                 : "buffers: not registered (heap; -R 1 registers them)");
  print_header(o, h);
}

//! --transport shm: this process is one rank of the job the launcher (tutti-run) described in TUTTI_*.
//! Every rank runs the sweep; only rank 0 prints, other ranks only their errors.
template <class Algorithm, class Codec = tutti::codec::none>
int run_shm(options o) {
  using comm_t = tutti::communicator<shm, Algorithm, Codec>;
  require_collective<Algorithm, shm>(o);
  const shm_setup s = prepare_shm(o);
  const bool leader = s.info.rank == 0;
  try {
    comm_t comm(std::make_unique<shm>(s.info, s.sopt), s.copt);
    const double membw = leader && o.membw ? memcpy_bandwidth_gbs() : 0.0;  // peers wait in the warm-up
    if (leader) print_shm_header(o, s, membw);
    comm_adapter<comm_t> adapter(comm);
    rank_bench bench(adapter, o, s.sizes.back(), membw);
    bench.run(s.sizes);
    if (leader) print_footer(bench.totals());
    // Nobody leaves before rank 0 has printed: the launcher stops the whole job as soon as one
    // rank exits non-zero (here: wrong results), which would cut the table short.
    comm.barrier();
    return bench.totals().wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-bench: rank %d failed: %s\n", s.info.rank, e.what());
    return 1;
  }
}

#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
using multi_node = tutti::transport::multi_node;

//! --transport multi_node: this process is one rank of a job across hosts (multi_node.hpp says how it finds
//! the others). Like shm, every rank runs the sweep and rank 0 prints.
template <class Algorithm, class Codec = tutti::codec::none>
int run_multi_node(options o) {
  using comm_t = tutti::communicator<multi_node, Algorithm, Codec>;
  require_collective<Algorithm, multi_node>(o);
  const tutti::rank_info info = tutti::rank_info_from_env();
  if (o.ranks_given && o.ranks != info.world_size)
    throw usage_error{"-t " + std::to_string(o.ranks) + ": with --transport multi_node every process is one rank and the "
                      "launcher (" + info.launcher + ") started " + std::to_string(info.world_size)};
  o.ranks = info.world_size;
  check_root(o, "the launcher's world size");
  const auto copt = communicator_options_for(o);
  const auto sizes = sizes_of(o);
  const bool leader = info.rank == 0;
  try {
    comm_t comm(multi_node::from_env(), copt);
    const double membw = leader && o.membw ? memcpy_bandwidth_gbs() : 0.0;
    if (leader) {
      header_info h{multi_node::name, "processes", o.algorithm, copt, membw, {}};
      const auto& nodes = comm.transport().nodes();
      h.notes.push_back("launcher " + info.launcher + "  job " + info.job_id);
      h.notes.push_back("nodes: " + std::to_string(nodes.nodes()) + " (" + std::to_string(nodes.members[0].size()) +
                        " ranks on rank 0's); shm inside a node, UCX between nodes");
      h.notes.push_back("UCX: UCX_TLS=" + tutti::config::raw("UCX_TLS").value_or("(UCX's default)") +
                        "  UCX_NET_DEVICES=" + tutti::config::raw("UCX_NET_DEVICES").value_or("(all)"));
      print_header(o, h);
    }
    comm_adapter<comm_t> adapter(comm);
    rank_bench bench(adapter, o, sizes.back(), membw);
    bench.run(sizes);
    if (leader) print_footer(bench.totals());
    comm.barrier();  // as in run_shm: nobody leaves before rank 0 has printed
    return bench.totals().wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-bench: rank %d failed: %s\n", info.rank, e.what());
    return 1;
  }
}
#endif

using run_fn = int (*)(options);

struct runner {
  transport_kind transport;
  std::string_view algorithm;
  run_fn run;
};

namespace alg = tutti::algorithm;
//! hierarchical over simulated or real nodes: Intra inside each node, Inter across (hierarchical.hpp).
using hierarchical_ring = alg::hierarchical<alg::ring, alg::ring>;
using hierarchical_hd = alg::hierarchical<alg::halving_doubling, alg::ring>;
using hierarchical_direct = alg::hierarchical<alg::direct, alg::ring>;

//! Every (transport, algorithm) tutti-bench can run; a new algorithm is one more line per transport.
//! Each line instantiates the communicator and every collective the algorithm has, which is most of
//! tutti-bench's compile time. algorithm::direct reads peers' memory, which only one-sided
//! transports (shm) offer; hierarchical gives Intra a one-sided group view on such a transport, so
//! hierarchical_direct (direct inside nodes) is shm-only too.
constexpr runner runners[] = {
    {transport_kind::inproc, alg::ring::name, &run_inproc<alg::ring>},
    {transport_kind::inproc, alg::automatic::name, &run_inproc<alg::automatic>},
    {transport_kind::inproc, alg::eager::name, &run_inproc<alg::eager>},
    {transport_kind::inproc, alg::tree::name, &run_inproc<alg::tree>},
    {transport_kind::inproc, alg::halving_doubling::name, &run_inproc<alg::halving_doubling>},
    {transport_kind::inproc, "hierarchical", &run_inproc<hierarchical_ring>},
    {transport_kind::inproc, "hierarchical_hd", &run_inproc<hierarchical_hd>},
    {transport_kind::shm, alg::ring::name, &run_shm<alg::ring>},
    {transport_kind::shm, alg::direct::name, &run_shm<alg::direct>},
    {transport_kind::shm, alg::automatic::name, &run_shm<alg::automatic>},
    {transport_kind::shm, alg::tree::name, &run_shm<alg::tree>},
    {transport_kind::shm, alg::halving_doubling::name, &run_shm<alg::halving_doubling>},
    {transport_kind::shm, "hierarchical", &run_shm<hierarchical_ring>},
    {transport_kind::shm, "hierarchical_hd", &run_shm<hierarchical_hd>},
    {transport_kind::shm, "hierarchical_direct", &run_shm<hierarchical_direct>},
    // tuned: each call runs what the tuning table chose (TUTTI_TUNING_FILE, else the built-in one),
    // over the candidates tutti-tune measures (algorithm/tuned_sets.hpp).
    {transport_kind::shm, "tuned", &run_shm<alg::tuned_on_one_host>},
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
    {transport_kind::multi_node, alg::ring::name, &run_multi_node<alg::ring>},
    {transport_kind::multi_node, alg::automatic::name, &run_multi_node<alg::automatic>},
    {transport_kind::multi_node, alg::eager::name, &run_multi_node<alg::eager>},
    {transport_kind::multi_node, alg::tree::name, &run_multi_node<alg::tree>},
    {transport_kind::multi_node, alg::halving_doubling::name, &run_multi_node<alg::halving_doubling>},
    {transport_kind::multi_node, "hierarchical", &run_multi_node<hierarchical_ring>},
    {transport_kind::multi_node, "hierarchical_direct", &run_multi_node<hierarchical_direct>},
    {transport_kind::multi_node, "tuned", &run_multi_node<alg::tuned_across_hosts>},
#endif
};

// ---- the codec axis: only where it makes sense --------------------------------------------------

//! One (transport, algorithm) run with each lossy codec, in codec_kind order (fp16, bf16, int8).
//! Each entry instantiates a communicator on which comm_adapter calls only allreduce, barrier and
//! allgather (the per-row figures), not every collective the algorithm has.
using lossy_runs = std::array<run_fn, 3>;
template <class Algorithm>
constexpr lossy_runs lossy_inproc = {&run_inproc<Algorithm, tutti::codec::fp16>,
                                     &run_inproc<Algorithm, tutti::codec::bf16>,
                                     &run_inproc<Algorithm, tutti::codec::int8>};
template <class Algorithm>
constexpr lossy_runs lossy_shm = {&run_shm<Algorithm, tutti::codec::fp16>, &run_shm<Algorithm, tutti::codec::bf16>,
                                  &run_shm<Algorithm, tutti::codec::int8>};
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
template <class Algorithm>
constexpr lossy_runs lossy_multi_node = {&run_multi_node<Algorithm, tutti::codec::fp16>,
                                         &run_multi_node<Algorithm, tutti::codec::bf16>,
                                         &run_multi_node<Algorithm, tutti::codec::int8>};
#endif

struct lossy_runner {
  transport_kind transport;
  std::string_view algorithm;
  lossy_runs runs;
};

//! The (transport, algorithm) pairs --codec fp16|bf16|int8 runs with. A lossy codec matters where
//! the link is slow, so across hosts (multi_node) every carrying algorithm that suits a network
//! (automatic there is hierarchical<direct, ring>); on one host only what local runs and checks
//! need: ring and automatic (direct) on shm, ring on inproc (the defaults, so `tutti-bench --codec
//! fp16` runs without a launcher; automatic is ring there). A new pair is one line and three
//! instantiations, one per codec: the 21 here took tutti-bench's compile from 48 to 72 s of CPU
//! (g++ 12, -O3; measured 2026-11-25), about 1.2 s each, rather than three for each of the 20
//! lines of `runners`.
constexpr lossy_runner lossy_runners[] = {
    {transport_kind::inproc, alg::ring::name, lossy_inproc<alg::ring>},
    {transport_kind::shm, alg::ring::name, lossy_shm<alg::ring>},
    {transport_kind::shm, alg::automatic::name, lossy_shm<alg::automatic>},
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
    {transport_kind::multi_node, alg::ring::name, lossy_multi_node<alg::ring>},
    {transport_kind::multi_node, alg::halving_doubling::name, lossy_multi_node<alg::halving_doubling>},
    {transport_kind::multi_node, "hierarchical", lossy_multi_node<hierarchical_ring>},
    {transport_kind::multi_node, alg::automatic::name, lossy_multi_node<alg::automatic>},
#endif
};

run_fn find_lossy_runner(const options& o) {
  const auto index = static_cast<std::size_t>(o.codec) - 1;  // codec_kind: none, fp16, bf16, int8
  std::string built;  // "--transport inproc: ring; --transport shm: ring, automatic; ..."
  for (std::size_t i = 0; i < std::size(lossy_runners); ++i) {
    const auto& r = lossy_runners[i];
    if (r.algorithm == o.algorithm && r.transport == o.transport) return r.runs[index];
    const bool first_of_transport = i == 0 || lossy_runners[i - 1].transport != r.transport;
    built += (first_of_transport ? std::string(i ? "; " : "") + "--transport " + std::string(name_of(r.transport)) + ": "
                                 : std::string(", ")) +
             std::string(r.algorithm);
  }
  throw usage_error{"--codec " + std::string(name_of(o.codec)) + " is not built for --transport " +
                    std::string(name_of(o.transport)) + " with --algorithm " + o.algorithm + "; it is built for " + built};
}

run_fn find_runner(const options& o) {
  if (o.codec != codec_kind::none) return find_lossy_runner(o);
  std::string names, with;
  for (const auto& r : runners) {
    if (r.algorithm == o.algorithm && r.transport == o.transport) return r.run;
    if (r.algorithm == o.algorithm)
      with += (with.empty() ? "--transport " : " or --transport ") + std::string(name_of(r.transport));
    if (&r == std::find_if(runners, &r + 1, [&](const runner& x) { return x.algorithm == r.algorithm; }))
      names += (names.empty() ? "" : ", ") + std::string(r.algorithm);  // first time this name appears
  }
  if (with.empty()) throw usage_error{"--algorithm '" + o.algorithm + "': unknown algorithm (one of " + names + ")"};
  throw usage_error{"--algorithm " + o.algorithm + " is not available with --transport " + std::string(name_of(o.transport)) +
                    "; it needs " + with +
                    (o.algorithm == alg::direct::name
                         ? " (it reads peers' shared memory; run: tutti-run -n 2 -- tutti-bench --algorithm direct)"
                         : "")};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const options o = parse(argc, argv);
    return find_runner(o)(o);
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
