// tutti-tune's pieces that need no ranks (tools/tune/): sizes and flags, which knob variants are
// measured where, the statistics, rows from a sweep's points, --merge and --pool.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "../../tools/tune/contenders.hpp"
#include "../../tools/tune/make_table.hpp"
#include "../../tools/tune/options.hpp"
#include "../../tools/tune/sweep.hpp"

namespace {

using tutti::collective;
namespace tn = tutti::tuner;

tune::options parsed(std::vector<std::string> args) {
  args.insert(args.begin(), "tutti-tune");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return tune::parse(static_cast<int>(argv.size()), argv.data());
}

//! ring (every collective), direct (allreduce only) and halving_doubling (every collective).
std::vector<tn::candidate_info> three() {
  std::vector<tn::candidate_info> c(3);
  c[0].name = "ring";
  c[1].name = "direct";
  c[2].name = "halving_doubling";
  for (auto& x : c) x.has.fill(true);
  c[1].has.fill(false);
  c[1].has[static_cast<std::size_t>(collective::allreduce)] = true;
  return c;
}

}  // namespace

TEST_CASE("tutti-tune: sizes and flags") {
  CHECK(tune::parse_bytes("8", "--x") == 8);
  CHECK(tune::parse_bytes("64K", "--x") == 64 << 10);
  CHECK(tune::parse_bytes("1MiB", "--x") == 1 << 20);
  CHECK(tune::parse_bytes("2G", "--x") == std::uint64_t{2} << 30);
  CHECK_THROWS_AS((void)tune::parse_bytes("1X", "--x"), tune::usage_error);

  const auto sizes = tune::sweep_sizes(parsed({}));  // 8 B x4 ... and 256 MiB itself
  REQUIRE(sizes.size() == 14);
  CHECK(sizes.front() == 8);
  CHECK(sizes[12] == std::uint64_t{128} << 20);
  CHECK(sizes.back() == std::uint64_t{256} << 20);
  for (auto s : tune::sweep_sizes(parsed({"--min-bytes", "8", "--max-bytes", "100", "--factor", "1.5"})))
    CHECK(s % 4 == 0);  // whole f32 / i32 elements
  CHECK(tune::sweep_sizes(parsed({"--sizes", "1M,8,64K,8"})) == std::vector<std::uint64_t>{8, 64 << 10, 1 << 20});
  CHECK_THROWS_AS(parsed({"--sizes", "6"}), tune::usage_error);
  CHECK_THROWS_AS(parsed({"--collectives", "allreduse"}), tune::usage_error);
  CHECK_THROWS_AS(parsed({"--transport", "ucx"}), tune::usage_error);
  const auto o = parsed({"--collectives", "allgather,alltoall", "--dtypes", "integer", "--budget", "20"});
  CHECK(o.collectives == std::vector<collective>{collective::allgather, collective::alltoall});
  CHECK(o.dtypes == std::vector<tutti::dtype>{tutti::dtype::i32});
  CHECK(o.budget_s == 20);
  CHECK(parsed({"--explain", "64K"}).what == tune::mode::explain);
}

TEST_CASE("tutti-tune: a knob variant is measured only where it runs another schedule than the default") {
  const auto cands = three();
  const std::uint64_t always = std::uint64_t{1} << 30, stage = 1 << 20;
  const auto list = tune::contenders_for(cands, collective::allreduce, 2, true, always, stage);
  REQUIRE(list.size() == 5);  // ring, direct, halving_doubling, direct at 0 and at 1 GiB
  CHECK(list[3].label() == "direct {direct.one_shot_bytes: 0}");
  CHECK(list[3].candidate == 1);
  REQUIRE(list[3].made);
  REQUIRE(list[3].made->find<tn::direct_tuning>());
  CHECK(list[3].made->find<tn::direct_tuning>()->one_shot_bytes == 0);
  // direct's default is one-shot up to 32 KiB: 0 changes it below, 1 GiB above (up to the stage).
  CHECK(list[3].measured_at(8));
  CHECK(list[3].measured_at(32 << 10));
  CHECK_FALSE(list[3].measured_at((32 << 10) + 4));
  CHECK_FALSE(list[4].measured_at(32 << 10));
  CHECK(list[4].measured_at(64 << 10));
  CHECK(list[4].measured_at(1 << 20));
  CHECK_FALSE(list[4].measured_at(2 << 20));  // above the stage both are two-shot
  CHECK(list[0].measured_at(2 << 20));

  // Broadcast's scatter threshold changes nothing on 2 ranks; on 3 it has its two variants.
  CHECK(tune::contenders_for(cands, collective::broadcast, 2, true, always, stage).size() == 2);
  CHECK(tune::contenders_for(cands, collective::broadcast, 3, true, always, stage).size() == 4);
  CHECK(tune::contenders_for(cands, collective::allreduce, 2, false, always, stage).size() == 3);
}

TEST_CASE("tutti-tune: statistics") {
  CHECK(tune::median_of({3, 1, 2}) == 2);
  CHECK(tune::median_of({4, 1, 2, 3}) == 2.5);
  CHECK(tune::spread_of({3, 1, 2}) == doctest::Approx(1.0));            // p75 2.5 - p25 1.5
  CHECK(tune::spread_of({10, 1, 2, 3, 4}) == doctest::Approx(2.0));     // one outlier does not make the spread
  CHECK(tune::spread_of({5}) == 0);
  // nccl-tests: allreduce busbw = bytes / time x 2(n-1)/n; allgather counts n blocks, x (n-1)/n.
  CHECK(tune::busbw_gbs(collective::allreduce, 1000000, 4, 1000) == doctest::Approx(1.5));
  CHECK(tune::busbw_gbs(collective::allgather, 1000000, 4, 1000) == doctest::Approx(3.0));
}

TEST_CASE("tutti-tune: rows from the points, and --merge") {
  const auto cands = three();
  const tn::layout where{2, 1, 2};
  std::vector<tune::series> all(1);
  auto& s = all[0];
  s.contenders = tune::contenders_for(cands, collective::allreduce, 2, false, 1 << 30, 1 << 20);
  s.sizes = {8, 1 << 16, 1 << 18, 1 << 20};
  s.points.assign(4, std::vector<tune::point>(3));
  // 8 B: ring is faster than direct (the default: fastest at as many sizes as ring, with the lower
  // geometric mean) but within the noise; 64 and 256 KiB: direct by far; 1 MiB: ring beyond the noise.
  s.points[0][0].rep_us = {9, 10, 11};
  s.points[0][1].rep_us = {10, 11, 14};
  s.points[0][2].rep_us = {20, 21, 22};
  for (int i : {1, 2}) {
    s.points[i][0].rep_us = {99, 100, 101};
    s.points[i][1].rep_us = {9, 10, 11};
    s.points[i][2].rep_us = {200, 201, 202};
  }
  s.points[3][0].rep_us = {100, 101, 102};
  s.points[3][1].rep_us = {300, 301, 302};
  s.points[3][2].rep_us = {200, 201, 202};
  const auto samples = tune::samples_of(s, where);
  REQUIRE(samples.size() == 12);
  CHECK(samples[1].measured.algorithm == "direct");
  CHECK(samples[1].measured.median_us == 11);
  CHECK(samples[1].measured.spread_us == 2);  // interquartile range: p75 12.5 - p25 10.5
  const auto rows = tune::rows_of(all, samples, where, "ring");  // automatic's choice, slower over the sweep
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].algorithm == "direct");
  CHECK(rows[0].min_bytes == 0);
  CHECK(rows[1].algorithm == "ring");
  CHECK(rows[1].max_bytes == std::numeric_limits<std::uint64_t>::max());
  CHECK(rows[0].max_bytes + 1 == rows[1].min_bytes);

  tn::table fresh;
  fresh.samples = samples;
  fresh.rows = rows;
  fresh.made.hosts = {"b"};
  fresh.made.command = "second";
  fresh.made.tune_seconds = 2;
  tn::table old;
  tn::row other = rows[0];
  other.where = {4, 1, 4};
  old.rows = {rows[0], other};  // the first is measured again, the second kept
  old.made.hosts = {"a", "b"};
  old.made.command = "first";
  old.made.tune_seconds = 3;
  const tn::table t = tune::merged(old, fresh);
  CHECK(t.rows.size() == 3);
  CHECK(t.rows[0].where == tn::layout{4, 1, 4});
  CHECK(t.made.hosts == std::vector<std::string>{"a", "b"});
  CHECK(t.made.command == "first ; then second");
  CHECK(t.made.tune_seconds == 5);
}

TEST_CASE("tutti-tune: --pool outvotes one launch's slow state") {
  const tn::layout where{4, 1, 4};
  auto point = [&](const char* algorithm, std::uint64_t bytes, double median, double spread) {
    tn::sample s;
    s.where = where;
    s.bytes = bytes;
    s.measured.algorithm = algorithm;
    s.measured.median_us = median;
    s.measured.spread_us = spread;
    s.measured.busbw_gbs = 1.0 / median;
    return s;
  };
  // Launch 1 kept direct slow at 8 B (the shm 4-rank 18.3 us against 3.2-3.6 us of later launches);
  // launches 2 and 3 did not. Launch 2 also reached 64 B, which this launch's budget cut.
  const auto dir = std::filesystem::temp_directory_path() / ("tutti-pool-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto table_of = [&](std::vector<tn::sample> samples, const char* name, double seconds) {
    tn::table t;
    t.samples = std::move(samples);
    t.made.command = name;
    t.made.tune_seconds = seconds;
    const std::string path = (dir / name).string();
    tune::write_file(path, tn::write_table(t));
    return path;
  };
  tn::sample elsewhere = point("direct", 8, 1, 0.1);
  elsewhere.where = {2, 1, 2};  // another layout: not pooled
  const std::string one = table_of({point("direct", 8, 18.3, 1.0), point("ring", 8, 5.0, 0.2), elsewhere}, "one", 10);
  const std::string two = table_of({point("direct", 8, 3.4, 0.1), point("ring", 8, 5.1, 0.3), point("ring", 64, 6, 0.2)},
                                   "two", 20);
  const std::vector<tn::sample> fresh = {point("direct", 8, 3.6, 0.2), point("ring", 8, 4.9, 0.1)};
  const auto p = tune::pooled(fresh, {one, two});
  std::filesystem::remove_all(dir);
  REQUIRE(p.size() == 3);
  CHECK(p[0].measured.algorithm == "direct");
  CHECK(p[0].measured.median_us == 3.6);   // median of 18.3, 3.4, 3.6
  CHECK(p[0].measured.spread_us == 0.2);   // median of 1.0, 0.1, 0.2
  CHECK(p[0].measured.busbw_gbs == doctest::Approx(1.0 / 3.6));
  CHECK(p[1].measured.median_us == 5.0);   // ring: 5.0, 5.1, 4.9
  CHECK(p[2].bytes == 64);                 // only launch two reached it
  CHECK(p[2].measured.median_us == 6);
  // Launch one alone chose ring at 8 B; the pooled points keep the default, direct.
  const std::vector<tn::contender> order = {{"direct", {}}, {"ring", {}}};
  const auto alone = tn::choose(std::vector<tn::sample>{point("direct", 8, 18.3, 1.0), point("ring", 8, 5.0, 0.2)},
                                collective::allreduce, tn::dtype_class::floating, where, {"direct", {}}, order);
  REQUIRE(!alone.empty());
  CHECK(alone.front().algorithm == "ring");
  const auto together = tn::choose(p, collective::allreduce, tn::dtype_class::floating, where, {"direct", {}}, order);
  REQUIRE(!together.empty());
  CHECK(together.front().algorithm == "direct");
  CHECK(parsed({"--pool", "a.json,b.json"}).pool == std::vector<std::string>{"a.json", "b.json"});
}
