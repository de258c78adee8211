//! tuned<A...>: every conformance suite over threads and simulated nodes (node_aware<shm, shm>)
//! with a table that switches candidates at 64 B, 4 KiB and 64 KiB (over processes:
//! tuned_processes_test.cpp, a file of its own for the sanitizer rotation's sake); dispatch at
//! every boundary; forcing; fallbacks; different tables on different ranks refused; the argument
//! check across ranks that chose different candidates.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/halving_doubling.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/algorithm/tree.hpp>
#include <tutti/algorithm/tuned.hpp>
#include <tutti/codec/float16.hpp>
#include <tutti/codec/topk.hpp>
#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/feedback_conformance.hpp>
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/testing/inproc_world.hpp>
#include <tutti/testing/node_aware_world.hpp>
#include <tutti/tuner/table_write.hpp>

#include "support/tuned_tables.hpp"

namespace {
namespace alg = tutti::algorithm;
using namespace tutti::testing;

using threads_tuned = alg::tuned<alg::ring, alg::halving_doubling, alg::tree>;
using threads = inproc_world<threads_tuned>;
using processes = fork_world<alg::tuned<alg::ring, alg::direct, alg::halving_doubling, alg::tree>>;
using nodes = node_aware_world<alg::tuned<alg::ring, alg::hierarchical<alg::direct, alg::ring>, alg::halving_doubling>,
                               blocked_nodes<2>>;

// Codecs: every candidate carries them (tree does not, so it is left out), and the results must not
// depend on which one ran.
using lossy_threads = inproc_world<alg::tuned<alg::ring, alg::halving_doubling>, one_node, tutti::codec::bf16>;
using feedback_threads = inproc_world<alg::tuned<alg::ring, alg::halving_doubling>, one_node, tutti::codec::topk>;

// Every tuned<...> of this file reads its switching table (support/tuned_tables.hpp).
const bool served = serve_switching_table<threads>() && serve_switching_table<processes>() &&
                    serve_switching_table<nodes>() && serve_switching_table<lossy_threads>();

static_assert(threads_tuned::name == "tuned<ring, halving_doubling, tree>");
static_assert(!threads_tuned::checks_arguments<tutti::transport::inproc>);  // the communicator checks
static_assert(processes::communicator_type::algorithm_type::checks_arguments<tutti::transport::shm>);  // direct does
static_assert(processes::communicator_type::algorithm_type::checker<tutti::transport::shm> == 1);
static_assert(threads_tuned::carries_lossy_codecs == false);  // tree does not
static_assert(alg::tuned<alg::ring, alg::direct>::carries_lossy_codecs);
}  // namespace

TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, threads, nodes);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, threads, nodes);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, threads, nodes);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, threads, nodes);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, threads, nodes);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, threads, nodes);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, threads, nodes);
TEST_CASE_TEMPLATE_INVOKE(compressed_allreduce_conformance, lossy_threads);
TEST_CASE_TEMPLATE_INVOKE(feedback_allreduce_conformance, feedback_threads);

namespace {
//! The candidate index of `algorithm` in Tuned.
template <class Tuned>
std::uint32_t index_of(const std::string& algorithm) {
  for (std::uint32_t i = 0; i < Tuned::count; ++i)
    if (Tuned::control::names[i] == algorithm) return i;
  throw std::runtime_error("no candidate " + algorithm);
}
}  // namespace

TEST_CASE("tuned runs the table's candidate at every boundary, b-1, b and b+1 bytes") {
  REQUIRE(served);
  threads::run(3, [](threads::communicator_type& comm) {
    auto& control = comm.algorithm_control();
    const tutti::tuner::layout here{3, 1, 3};
    if (!(control.layout() == here)) throw std::runtime_error("layout is not 3 ranks on 1 node");
    for (const std::uint64_t b : tuned_boundaries)
      for (const std::uint64_t bytes : {b - 1, b, b + 1}) {
        // u8: the integer class, every byte count exact
        std::vector<std::uint8_t> v(bytes, 1);
        comm.allreduce(v, tutti::op::sum);
        for (auto x : v)
          if (x != 3) throw std::runtime_error("wrong allreduce result at " + std::to_string(bytes) + " bytes");
        const auto want = table_says(control.table(), here, tutti::collective::allreduce,
                                     tutti::tuner::dtype_class::integer, bytes);
        if (control.last_run() != index_of<threads_tuned>(want))
          throw std::runtime_error("at " + std::to_string(bytes) + " bytes ran " +
                                   std::string(threads_tuned::control::names[control.last_run()]) + ", the table says " + want);
        // f32 at a multiple of 4 near it: the float class's rows
        const std::uint64_t fbytes = b + 4;
        std::vector<float> f(fbytes / 4, 1.0f);
        comm.allgather(std::vector<float>(f), std::vector<float>(f.size() * 3));
        const auto fwant = table_says(control.table(), here, tutti::collective::allgather,
                                      tutti::tuner::dtype_class::floating, fbytes);
        if (control.last_run() != index_of<threads_tuned>(fwant))
          throw std::runtime_error("allgather at " + std::to_string(fbytes) + " bytes ran the wrong candidate");
      }
  });
}

TEST_CASE("force runs one candidate until release; a forced candidate lacking the collective runs the first that has it") {
  REQUIRE(served);
  threads::run(4, [](threads::communicator_type& comm) {
    auto& control = comm.algorithm_control();
    std::vector<float> v(100, 1.0f);
    for (std::uint32_t i = 0; i < threads_tuned::count; ++i) {
      control.force(i);
      comm.allreduce(v, tutti::op::sum);  // every candidate has allreduce
      if (control.last_run() != i) throw std::runtime_error("forced candidate did not run");
    }
    control.force(2);  // tree has no allgather: ring, the first that has it, runs
    std::vector<float> all(400);
    comm.allgather(std::vector<float>(100, 2.0f), all);
    if (control.last_run() != 0) throw std::runtime_error("allgather did not fall back to ring");
    for (float x : all)
      if (x != 2.0f) throw std::runtime_error("wrong allgather");
    control.release();
    std::vector<std::uint8_t> small(10, 1);
    comm.allreduce(small, tutti::op::sum);
    const auto want = table_says(control.table(), control.layout(), tutti::collective::allreduce,
                                 tutti::tuner::dtype_class::integer, 10);
    if (control.last_run() != index_of<threads_tuned>(want)) throw std::runtime_error("release did not restore the table");
    bool refused = false;
    try {
      control.force(3);
    } catch (const tutti::invalid_argument&) {
      refused = true;
    }
    if (!refused) throw std::runtime_error("force(3) of 3 candidates accepted");
  });
}

TEST_CASE("with no row for its layout tuned runs what automatic would, with its defaults") {
  tuned_source_scope empty([](int, std::string_view) { return std::make_shared<const tutti::tuner::table>(); });
  threads::run(2, [](threads::communicator_type& comm) {  // inproc: automatic runs ring
    std::vector<float> v(10, 1.0f);
    comm.allreduce(v, tutti::op::sum);
    if (comm.algorithm_control().last_run() != 0) throw std::runtime_error("fallback is not ring");
  });
  processes::run(2, [](processes::communicator_type& comm) {  // shm: direct
    std::vector<float> v(10, 1.0f);
    comm.allreduce(v, tutti::op::sum);
    if (comm.algorithm_control().last_run() != 1) throw std::runtime_error("fallback is not direct");
  });
}

TEST_CASE("ranks that read different tables are refused with both hashes and both sources, on every rank") {
  REQUIRE(served);
  const auto mine = tuned_tables().at(std::string(threads_tuned::name));
  auto other = std::make_shared<tutti::tuner::table>(*mine);
  other->source = "other.json";
  other->rows[0].algorithm = other->rows[0].algorithm == "ring" ? "tree" : "ring";
  tuned_source_scope differ([&](int rank, std::string_view) -> std::shared_ptr<const tutti::tuner::table> {
    if (rank == 2) return other;
    return mine;
  });
  const std::string h0 = tutti::tuner::hash_text(alg::tuned_table::hash_of(*mine));
  const std::string h2 = tutti::tuner::hash_text(alg::tuned_table::hash_of(*other));
  REQUIRE(h0 != h2);
  auto errors = tutti::transport::inproc::run(3, [&](tutti::transport::inproc& t) {
    try {
      threads::communicator_type comm(t);
    } catch (const tutti::mismatch& e) {
      const std::string what = e.what();
      const std::string want = "rank 0 has table " + h0 + " (the switching test table), rank 2 has table " + h2 +
                               " (other.json)";
      if (what.find(want) == std::string::npos) throw std::runtime_error("unexpected message: " + what);
      return;
    }
    throw std::runtime_error("different tables accepted");
  });
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

TEST_CASE("a table naming an algorithm not compiled in is refused when the communicator is made, with its row") {
  auto bad = std::make_shared<tutti::tuner::table>();
  bad->source = "bad.json";
  tutti::tuner::row r;
  r.where = {2, 1, 2};
  r.algorithm = "direct";  // not a candidate of threads_tuned
  r.line = 7;
  bad->rows.push_back(r);
  tuned_source_scope serve([&](int, std::string_view) -> std::shared_ptr<const tutti::tuner::table> { return bad; });
  CHECK_THROWS_WITH_AS(threads::run(2, [](threads::communicator_type&) {}),
                       doctest::Contains("bad.json: row 1 (line 7): algorithm 'direct' is not compiled into this tuned<"),
                       tutti::invalid_argument);
}

TEST_CASE("ranks whose counts chose different candidates still meet in direct's argument check") {
  REQUIRE(served);
  using comm_type = processes::communicator_type;
  using tuned_type = comm_type::algorithm_type;
  // 2 ranks on one node: 8 bytes of f32 (2 elements) and 400 bytes (100) fall in different ranges.
  const auto& t = *tuned_tables().at(std::string(tuned_type::name));
  const tutti::tuner::layout here{2, 1, 2};
  const auto a = table_says(t, here, tutti::collective::allreduce, tutti::tuner::dtype_class::floating, 8);
  const auto b = table_says(t, here, tutti::collective::allreduce, tutti::tuner::dtype_class::floating, 400);
  REQUIRE(a != b);
  REQUIRE((a == "direct" || b == "direct"));
  processes::run(2, [](comm_type& comm) {
    std::vector<float> v(comm.rank() == 0 ? 2 : 100, 1.0f);
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        comm.allreduce(v, tutti::op::sum);
        throw std::runtime_error("allreduce of different counts returned");
      } catch (const tutti::mismatch& e) {
        if (std::string(e.what()).find("count") == std::string::npos)
          throw std::runtime_error(std::string("mismatch does not name the count: ") + e.what());
      }
    }
    std::vector<float> ok(5, 1.0f);  // still usable
    comm.allreduce(ok, tutti::op::sum);
    if (ok[0] != 2.0f) throw std::runtime_error("wrong result after the mismatch");
  });
}

namespace {
//! An algorithm whose prepare counts its calls and leaves state behind for its collectives.
struct prepared {
  using tutti_role = tutti::role::algorithm;
  static constexpr std::string_view name = "prepared";
  struct made {
    int world = 0;
  };
  static inline std::atomic<int> calls{0};
  template <class Ctx>
  static void prepare(Ctx& c) {
    ++calls;
    c.template state<made>([&] { return std::make_shared<made>(made{c.nodes().world_size()}); });
  }
  template <class Ctx>
  static void barrier(Ctx& c) {
    const made& m = c.template state<made>([]() -> std::shared_ptr<made> { throw std::runtime_error("not prepared"); });
    if (m.world != c.size()) throw std::runtime_error("prepare saw another world");
    alg::ring::barrier(c);
  }
};
static_assert(tutti::prepared_algorithm<prepared, inproc_world<prepared>::communicator_type::context_type>);
template <class Comm>
concept has_control = requires(Comm& c) { c.algorithm_control(); };
static_assert(!has_control<inproc_world<alg::ring>::communicator_type>);  // only an algorithm with a control
static_assert(has_control<threads::communicator_type>);
}  // namespace

TEST_CASE("both communicator constructors call an algorithm's prepare once, collectively, before any collective") {
  prepared::calls = 0;
  inproc_world<prepared>::run(3, [](auto& comm) { comm.barrier(); });  // made from a transport reference
  CHECK(prepared::calls == 3);
  prepared::calls = 0;  // each forked rank counts from here
  fork_world<prepared>::run(2, [](auto& comm) {  // made owning its transport
    if (prepared::calls != 1) throw std::runtime_error("prepare ran " + std::to_string(prepared::calls) + " times");
    comm.barrier();
  });
}

namespace {
//! A candidate that records the direct.one_shot_bytes its context hands it, then runs ring.
struct probe {
  using tutti_role = tutti::role::algorithm;
  static constexpr std::string_view name = "probe";
  static inline thread_local std::size_t seen = 0;
  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t n, tutti::dtype t, tutti::op o) {
    seen = c.template tuning<tutti::tuner::direct_tuning>().one_shot_bytes;
    alg::ring::allreduce(c, in, out, n, t, o);
  }
};
using probed = inproc_world<alg::tuned<alg::ring, probe>>;
}  // namespace

TEST_CASE("a row's tuning values reach the candidate for that call; force's overrides too") {
  auto t = std::make_shared<tutti::tuner::table>();
  t->source = "probe table";
  for (const auto& [lo, hi, algorithm, value] :
       {std::tuple{0ull, 99ull, "probe", 12345ull}, std::tuple{100ull, ~0ull, "probe", 0ull}}) {
    tutti::tuner::row r;
    r.where = {2, 1, 2};
    r.min_bytes = lo;
    r.max_bytes = hi;
    r.algorithm = algorithm;
    if (value) r.tuning.push_back({"direct.one_shot_bytes", value});
    t->rows.push_back(r);
  }
  tuned_source_scope serve([&](int, std::string_view) -> std::shared_ptr<const tutti::tuner::table> { return t; });
  probed::run(2, [](probed::communicator_type& comm) {
    std::vector<float> small(4, 1.0f), large(100, 1.0f);
    comm.allreduce(small, tutti::op::sum);
    if (probe::seen != 12345) throw std::runtime_error("the row's value did not reach the candidate");
    comm.allreduce(large, tutti::op::sum);  // a row without values: the defaults
    if (probe::seen != tutti::tuner::defaults<tutti::tuner::direct_tuning>.one_shot_bytes)
      throw std::runtime_error("the defaults did not come back");
    tutti::tuner::overrides chosen;
    tutti::tuner::direct_tuning d;
    d.one_shot_bytes = 777;
    chosen.set(d);
    comm.algorithm_control().force(1, &chosen);
    comm.allreduce(large, tutti::op::sum);
    if (probe::seen != 777) throw std::runtime_error("force's overrides did not reach the candidate");
    comm.algorithm_control().release();
  });
}

TEST_CASE("tuned inside a composition has no table, and says so on every rank") {
  using nested = inproc_world<alg::hierarchical<alg::tuned<alg::ring>, alg::ring>, blocked_nodes<2>>;
  nested::run(4, [](nested::communicator_type& comm) {
    std::vector<float> v(8, 1.0f);
    try {
      comm.allreduce(v, tutti::op::sum);
    } catch (const tutti::invalid_argument& e) {
      if (std::string(e.what()).find("tuned<ring> has no table here: it runs as a communicator's algorithm") ==
          std::string::npos)
        throw std::runtime_error(std::string("unexpected message: ") + e.what());
      return;
    }
    throw std::runtime_error("tuned ran inside hierarchical");
  });
}

TEST_CASE("the built-in table is set aside, not refused, by a tuned<...> it names no candidate of") {
  tuned_source_scope files(nullptr);  // no source override: TUTTI_TUNING_FILE, else the built-in table
  REQUIRE(std::getenv("TUTTI_TUNING_FILE") == nullptr);
  threads::run(2, [](threads::communicator_type& comm) {
    std::vector<float> v(10, 1.0f);
    comm.allreduce(v, tutti::op::sum);
    const auto& control = comm.algorithm_control();
    if (control.last_run() != 0) throw std::runtime_error("did not run ring, the fallback over inproc");
#if TUTTI_HAVE_YAML
    // tuning/default.json names direct, which threads_tuned lacks
    if (control.table().source.find("set aside") == std::string::npos)
      throw std::runtime_error("the built-in table was not set aside: " + control.table().source);
#endif
  });
}

#if TUTTI_HAVE_YAML
namespace {
//! Writes `t` to a file of its own under /tmp; removed when the test ends.
struct table_file {
  std::string path;
  explicit table_file(const tutti::tuner::table& t, const std::string& stem) {
    path = "/tmp/" + stem + "-" + unique_job_id("tuned") + ".json";
    std::ofstream(path) << tutti::tuner::write_table(t);
  }
  ~table_file() { std::remove(path.c_str()); }
};

//! Forks `world` ranks over shm, rank r with TUTTI_TUNING_FILE=file(r) (unset when empty): every
//! rank's communicator must refuse to be made with an Error whose message contains want(r).
template <class Error, class File, class Want>
void refused_on_every_rank(int world, File file, Want want, const std::string& scenario) {
  auto results = fork_ranks(world, [&](tutti::rank_info info) {
    tutti::algorithm::tuned_table::source_override() = nullptr;  // this child reads the file
    const std::string path = file(info.rank);
    if (path.empty()) ::unsetenv("TUTTI_TUNING_FILE");
    else ::setenv("TUTTI_TUNING_FILE", path.c_str(), 1);
    try {
      processes::communicator_type comm(std::make_unique<tutti::transport::shm>(info));
    } catch (const Error& e) {
      if (std::string(e.what()).find(want(info.rank)) == std::string::npos)
        throw std::runtime_error(std::string("unexpected message: ") + e.what());
      return;
    }
    throw std::runtime_error(scenario + ": the communicator was made");
  });
  throw_if_any_failed(results, scenario);
}
}  // namespace

TEST_CASE("TUTTI_TUNING_FILE is read, and ranks given different files are refused naming both") {
  REQUIRE(served);
  using comm_type = processes::communicator_type;
  using tuned_type = comm_type::algorithm_type;
  const auto& switching = *tuned_tables().at(std::string(tuned_type::name));
  auto changed = switching;
  for (auto& r : changed.rows)
    if (r.where == tutti::tuner::layout{2, 1, 2} && r.algorithm == "ring") r.algorithm = "tree";
  const table_file a(switching, "a"), b(changed, "b");
  const std::string ha = tutti::tuner::hash_text(tutti::tuner::table_hash(switching));
  const std::string hb = tutti::tuner::hash_text(tutti::tuner::table_hash(changed));
  REQUIRE(ha != hb);
  auto same = fork_ranks(2, [&](tutti::rank_info info) {
    tutti::algorithm::tuned_table::source_override() = nullptr;  // this child reads the file
    ::setenv("TUTTI_TUNING_FILE", a.path.c_str(), 1);
    comm_type comm(std::make_unique<tutti::transport::shm>(info));
    if (comm.algorithm_control().table().source != a.path) throw std::runtime_error("did not read the file");
    std::vector<std::uint8_t> v(10, 1);  // 10 bytes of integers: the first range
    comm.allreduce(v, tutti::op::sum);
    const auto want = table_says(switching, {2, 1, 2}, tutti::collective::allreduce, tutti::tuner::dtype_class::integer, 10);
    if (tuned_type::control::names[comm.algorithm_control().last_run()] != want)
      throw std::runtime_error("the file's row did not choose");
  });
  throw_if_any_failed(same, "one file");
  refused_on_every_rank<tutti::mismatch>(
      2, [&](int rank) { return rank == 0 ? a.path : b.path; },
      [&](int) { return "rank 0 has table " + ha + " (" + a.path + "), rank 1 has table " + hb + " (" + b.path + ")"; },
      "two files");
}

TEST_CASE("a rank that cannot read its TUTTI_TUNING_FILE fails every rank at once, named, instead of a wait") {
  const std::string missing = "/tmp/missing-" + unique_job_id("tuned") + ".json";
  const std::string error = "cannot read tuning table '" + missing + "'";
  refused_on_every_rank<tutti::invalid_argument>(
      3, [&](int rank) { return rank == 1 ? missing : std::string(); },
      [&](int rank) { return rank == 1 ? error : "rank 1 could not read its tuning table: " + error; }, "missing file");
}

TEST_CASE("a bad TUTTI_TUNING_FILE is refused with its row and line when the communicator is made") {
  const std::string path = "/tmp/bad-" + unique_job_id("tuned") + ".json";
  std::ofstream(path) << R"({"format": "tutti-tuning-table", "version": 1, "rows": [
  {"collective": "allreduce", "dtype_class": "float", "min_bytes": 0, "max_bytes": "inf", "world": 2, "nodes": 1, "ranks_per_node": 2, "algorithm": "no_such"}
]})";
  struct removed {
    const std::string& path;
    ~removed() { std::remove(path.c_str()); }
  } when_done{path};
  refused_on_every_rank<tutti::invalid_argument>(
      2, [&](int) { return path; },
      [&](int) { return path + ": row 1 (line 2): algorithm 'no_such' is not compiled into this tuned<"; }, "bad file");
}

TEST_CASE("the built-in table's rows choose for a tuned<...> that has their candidates") {
  tuned_source_scope files(nullptr);
  processes::run(2, [](processes::communicator_type& comm) {
    const auto& control = comm.algorithm_control();
    if (control.table().source != tutti::tuner::default_table_source)
      throw std::runtime_error("not the built-in table: " + control.table().source);
    if (control.table_hash() != tutti::tuner::table_hash(*tutti::algorithm::tuned_table::built_in()))
      throw std::runtime_error("hash is not the built-in table's");
  });
}
#endif
