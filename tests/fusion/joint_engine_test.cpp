// Joint tuning end to end over threads: a communicator of algorithm::tuned<...> whose candidates
// record every allreduce they run. Rank 0's tuner changes the algorithm (and the threshold and
// cycle) between rounds while tensors keep arriving: every rank must run each fused collective with
// the same candidate, the caller's own collectives keep the table's choice, and sums stay exact.
// These tests also run under ThreadSanitizer (fusion.engine_tsan, tests/fusion/CMakeLists.txt).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include <unistd.h>

#include <tutti/algorithm/tuned.hpp>
#include <tutti/transport/inproc.hpp>
#include <tutti/tutti.hpp>
#if TUTTI_HAVE_EIGEN
#include <tutti/fusion/autotuned.hpp>
#endif

using namespace tutti;

namespace {

//! One allreduce a candidate ran: on which rank, under which tag (the same on every rank for one
//! collective), with how many elements, and which candidate it was.
struct ran {
  std::uint64_t tag;
  std::size_t count;
  int candidate;
};
std::mutex ran_mutex;
std::map<int, std::vector<ran>> ran_by_rank;  //!< under ran_mutex

//! Base's schedules under another name, recording each allreduce.
template <class Base, int Id>
struct recorded {
  using tutti_role = role::algorithm;
  static constexpr std::string_view name = Id == 0 ? "rec0" : Id == 1 ? "rec1" : "rec2";
  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t n, dtype t, op o) {
    {
      std::lock_guard lock(ran_mutex);
      ran_by_rank[c.rank()].push_back({c.tag(), n, Id});
    }
    Base::allreduce(c, in, out, n, t, o);
  }
  template <class Ctx>
  static void barrier(Ctx& c) {
    Base::barrier(c);
  }
};
using recording_tuned = algorithm::tuned<recorded<algorithm::ring, 0>, recorded<algorithm::halving_doubling, 1>,
                                    recorded<algorithm::tree, 2>>;

//! The caller's own allreduce below is 3 floats (12 bytes): the table gives sizes under 64 bytes to
//! rec2 and the rest to rec0, so a forced candidate shows where it must not apply.
constexpr std::size_t own_count = 3;
constexpr int own_candidate = 2;

void serve_table(int world) {
  auto t = std::make_shared<tuner::table>();
  t->source = "joint_engine_test's table";
  for (const auto& [lo, hi, name] : {std::tuple<std::uint64_t, std::uint64_t, const char*>{0, 63, "rec2"},
                                     {64, std::numeric_limits<std::uint64_t>::max(), "rec0"}}) {
    tuner::row r;
    r.min_bytes = lo;
    r.max_bytes = hi;
    r.where = {world, 1, world};
    r.algorithm = name;
    t->rows.push_back(r);
  }
  std::shared_ptr<const tuner::table> shared = t;
  algorithm::tuned_table::source_override() = [shared](int, std::string_view) { return shared; };
  std::lock_guard lock(ran_mutex);
  ran_by_rank.clear();
}

//! Every rank ran each collective (by tag) with the same candidate; the caller's own allreduces
//! ran the table's; returns the candidates the engine's collectives ran.
std::set<int> check_ran_together(int world) {
  std::lock_guard lock(ran_mutex);
  REQUIRE(ran_by_rank.size() == static_cast<std::size_t>(world));
  std::map<std::uint64_t, int> by_tag;
  std::set<int> engine;
  for (const auto& [rank, list] : ran_by_rank) {
    CAPTURE(rank);
    for (const auto& r : list) {
      const auto [it, fresh] = by_tag.try_emplace(r.tag, r.candidate);
      if (!fresh) REQUIRE(it->second == r.candidate);
      if (r.count == own_count) CHECK(r.candidate == own_candidate);
      else engine.insert(r.candidate);
    }
  }
  for (const auto& [rank, list] : ran_by_rank) CHECK(list.size() == ran_by_rank.begin()->second.size());
  return engine;
}

//! A tuner that changes the algorithm (0: the table; 1..3: a candidate), the threshold and the cycle
//! after every round it sees work in.
class churning_joint_tuner final : public fusion::tuner {
 public:
  std::optional<fusion::parameters> observe(std::size_t, std::size_t tensors, std::size_t, fusion::clock::time_point) override {
    if (tensors == 0) return std::nullopt;
    static constexpr std::size_t thresholds[] = {0, 1024, 64 << 10, 1 << 20};
    static constexpr long cycles[] = {0, 100, 500};
    ++changes;
    return fusion::parameters{thresholds[rng() % 4], std::chrono::microseconds(cycles[rng() % 3]),
                              static_cast<std::uint32_t>(rng() % 4)};
  }
  std::mt19937 rng{11};
  inline static std::atomic<int> changes{0};
};

struct churning_joint {
  using tutti_role = role::fusion;
  static constexpr std::string_view name = "churning_joint";
  static constexpr std::size_t threshold_bytes = 4096;
  static constexpr std::chrono::microseconds cycle_time{100};
  static constexpr bool autotune = true;
  static std::unique_ptr<fusion::tuner> make_tuner(const fusion::parameters&, std::string_view, std::string_view) {
    return std::make_unique<churning_joint_tuner>();
  }
};

//! Small integers, exact in float: rank r's element i of tensor k.
float value(int rank, std::size_t k, std::size_t i) {
  return static_cast<float>(static_cast<int>((static_cast<std::size_t>(rank + 1) * (i % 11 + k)) % 37) - 18);
}

//! `steps` steps of `tensors` gradients (16..3000 floats) through allreduce_async, each checked, with
//! the caller's own small allreduce (own_count floats) between steps.
template <class Comm>
void train(Comm& comm, int steps, std::size_t tensors) {
  const int world = comm.size();
  std::mt19937 sizes(3);  // the same sizes on every rank
  std::vector<std::size_t> counts(tensors);
  for (auto& n : counts) n = 16 + sizes() % 3000;
  std::mt19937 jitter(static_cast<unsigned>(comm.rank() + 5));
  for (int step = 0; step < steps; ++step) {
    std::vector<std::vector<float>> g(tensors);
    std::vector<fusion::handle> hs;
    for (std::size_t k = tensors; k-- > 0;) {
      g[k].resize(counts[k]);
      for (std::size_t i = 0; i < counts[k]; ++i) g[k][i] = value(comm.rank(), k, i);
      std::string name = "g";  // (appended: GCC 12 warns, falsely, on "g" + to_string)
      name += std::to_string(k);
      hs.push_back(comm.allreduce_async(name, g[k], op::sum));
      if (jitter() % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(jitter() % 300));
    }
    for (auto& h : hs) h.wait();
    for (std::size_t k = 0; k < tensors; ++k) {
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < counts[k]; ++i) {
        float sum = 0;
        for (int r = 0; r < world; ++r) sum += value(r, k, i);
        wrong += g[k][i] != sum;
      }
      CAPTURE(k);
      REQUIRE(wrong == 0);
    }
    std::vector<float> own(own_count, static_cast<float>(comm.rank() + 1));
    comm.allreduce(own, op::sum);  // a blocking collective beside the engine: the table's choice
    for (float x : own) REQUIRE(x == static_cast<float>(world * (world + 1) / 2));
  }
}

template <class Comm, class F>
void run_world(int world, F&& fn) {
  auto errors = transport::inproc::run(world, [&](transport::inproc& t) {
    Comm comm(t);
    fn(comm);
  });
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

TEST_CASE("joint engine: every rank runs rank 0's algorithm choice in the same round; sums exact across switches") {
  for (int world : {2, 3}) {
    CAPTURE(world);
    serve_table(world);
    churning_joint_tuner::changes = 0;
    using comm_t = communicator<transport::inproc, recording_tuned, churning_joint>;
    run_world<comm_t>(world, [](comm_t& comm) {
      train(comm, 10, 24);
      comm.barrier();
      // Between rounds the engine holds no force: the control is back to the table's choices.
      CHECK_FALSE(comm.algorithm_control().forced());
    });
    algorithm::tuned_table::source_override() = {};
    CHECK(churning_joint_tuner::changes > 5);
    const auto engine = check_ran_together(world);
    CHECK(engine.size() == 3);  // the tuner forced each candidate at some point (and the table's rec0)
  }
}

#if TUTTI_HAVE_EIGEN
TEST_CASE("joint engine: fusion::autotuned over tuned<...> samples several algorithms, logs them, and ends alike on every rank") {
  const std::string log = "/tmp/tutti-joint-test-" + std::to_string(::getpid()) + ".csv";
  ::setenv("TUTTI_AUTOTUNE", "1", 1);
  ::setenv("TUTTI_AUTOTUNE_LOG", log.c_str(), 1);
  ::setenv("TUTTI_AUTOTUNE_STEPS_PER_SAMPLE", "1", 1);
  ::setenv("TUTTI_AUTOTUNE_WARMUP_SAMPLES", "1", 1);
  ::setenv("TUTTI_AUTOTUNE_MAX_SAMPLES", "8", 1);
  const int world = 3;
  serve_table(world);
  using comm_t = communicator<transport::inproc, recording_tuned, fusion::autotuned<4096, 100>>;
  std::vector<fusion::parameters> finals(world);
  run_world<comm_t>(world, [&](comm_t& comm) {
    train(comm, 40, 24);
    comm.barrier();  // a turn: no fused collective is in flight, parameters are those of one round
    finals[static_cast<std::size_t>(comm.rank())] = comm.fusion_parameters();
  });
  algorithm::tuned_table::source_override() = {};
  for (const char* v : {"TUTTI_AUTOTUNE", "TUTTI_AUTOTUNE_LOG", "TUTTI_AUTOTUNE_STEPS_PER_SAMPLE",
                        "TUTTI_AUTOTUNE_WARMUP_SAMPLES", "TUTTI_AUTOTUNE_MAX_SAMPLES"})
    ::unsetenv(v);
  check_ran_together(world);
  CHECK(finals[0] == finals[1]);
  CHECK(finals[1] == finals[2]);
  CHECK(finals[0].algorithm <= 3);

  std::ifstream in(log);
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);
  std::set<std::string> algorithms;
  int rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    // sample,threshold_bytes,cycle_us,codec,algorithm,...: the candidate's name, or the tuned<...>'s (quoted) for level 0
    const auto codec = line.find(",none,");
    REQUIRE(codec != std::string::npos);
    const auto from = codec + 6;
    const auto to = line[from] == '"' ? line.find('"', from + 1) + 1 : line.find(',', from);
    algorithms.insert(line.substr(from, to - from));
  }
  std::remove(log.c_str());
  CHECK(rows == 9);  // one warm-up sample, then eight scored; then it settles
  CHECK(algorithms.size() >= 2);
  for (const auto& a : algorithms) CHECK((a == "rec0" || a == "rec1" || a == "rec2" || a == "\"tuned<rec0, rec1, rec2>\""));
}
#endif
