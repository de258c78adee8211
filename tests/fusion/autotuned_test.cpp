// fusion::autotuned end to end: the tuner samples, logs every sample to TUTTI_AUTOTUNE_LOG, moves
// the parameters while tensors keep arriving, settles, and the sums stay exact throughout.
#include <doctest/doctest.h>

#if TUTTI_HAVE_EIGEN
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <tutti/fusion/autotuned.hpp>
#include <tutti/transport/inproc.hpp>
#include <tutti/tutti.hpp>

using namespace tutti;

TEST_CASE("autotuned: samples are logged, parameters move on every rank alike, sums stay exact") {
  const std::string log = "/tmp/tutti-autotune-test-" + std::to_string(::getpid()) + ".csv";
  ::setenv("TUTTI_AUTOTUNE_LOG", log.c_str(), 1);
  ::setenv("TUTTI_AUTOTUNE_STEPS_PER_SAMPLE", "1", 1);
  ::setenv("TUTTI_AUTOTUNE_WARMUP_SAMPLES", "1", 1);
  ::setenv("TUTTI_AUTOTUNE_MAX_SAMPLES", "6", 1);
  using comm_t = communicator<transport::inproc, algorithm::ring, fusion::autotuned<4096, 100>>;
  std::vector<fusion::parameters> finals(3);
  auto errors = transport::inproc::run(3, [&](transport::inproc& t) {
    comm_t comm(t);
    const int world = comm.size();
    for (int step = 0; step < 40; ++step) {
      std::vector<std::vector<float>> g;
      std::vector<fusion::handle> hs;
      for (std::size_t k = 0; k < 24; ++k) g.emplace_back(1 + k * 131, static_cast<float>(comm.rank() + 1));
      for (std::size_t k = g.size(); k-- > 0;) {
        std::string name = "p";  // (appended: GCC 12 warns, falsely, on "p" + to_string)
        name += std::to_string(k);
        hs.push_back(comm.allreduce_async(name, g[k], op::sum));
      }
      for (auto& h : hs) h.wait();
      for (auto& v : g)
        for (float x : v) REQUIRE(x == static_cast<float>(world * (world + 1) / 2));
    }
    comm.barrier();  // a turn: no fused collective is in flight, parameters are those of one round
    finals[static_cast<std::size_t>(comm.rank())] = comm.fusion_parameters();
  });
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (const char* v : {"TUTTI_AUTOTUNE_LOG", "TUTTI_AUTOTUNE_STEPS_PER_SAMPLE", "TUTTI_AUTOTUNE_WARMUP_SAMPLES",
                        "TUTTI_AUTOTUNE_MAX_SAMPLES"})
    ::unsetenv(v);
  std::ifstream in(log);
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);
  CHECK(line == "sample,threshold_bytes,cycle_us,codec,algorithm,score_bytes_per_s,warmup,best_score_bytes_per_s");
  int rows = 0, warmups = 0;
  while (std::getline(in, line)) {
    ++rows;
    if (line.find(",none,ring,") == std::string::npos) FAIL_CHECK(line);
    if (line.find(",1,") != std::string::npos) ++warmups;
  }
  CHECK(rows == 7);  // one warm-up sample, then six scored; then it settles
  CHECK(warmups >= 1);
  std::remove(log.c_str());
  CHECK(finals[0] == finals[1]);
  CHECK(finals[1] == finals[2]);
}

TEST_CASE("autotuned: the search space maps both ends and round-trips a point") {
  using space = fusion::fusion_search_space;
  CHECK(space::at({0.0, 0.0}).threshold_bytes == 0);
  CHECK(space::at({1.0, 1.0}).threshold_bytes == (std::size_t{256} << 20));
  CHECK(space::at({1.0, 1.0}).cycle_time == std::chrono::milliseconds(50));
  const fusion::parameters p{std::size_t{16} << 20, std::chrono::microseconds(2500)};
  CHECK(space::at(space::of(p)) == p);
}
#else
TEST_CASE("autotuned: not built (Eigen 3 not found: tutti::eigen missing)") {}
#endif
