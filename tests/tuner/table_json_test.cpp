//! @file table_json_test.cpp  Tuning tables as JSON: the writer and hash, the strict reader (every
//! refusal at its row and line), compile()'s range checks, dispatch at every boundary, the default table.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include <tutti/tuner/default_table.hpp>
#include <tutti/tuner/selection.hpp>
#include <tutti/tuner/table_write.hpp>
#if TUTTI_HAVE_YAML
#include <tutti/tuner/table_json.hpp>
#endif

using namespace tutti::tuner;
using tutti::collective;

namespace {
constexpr std::uint64_t inf = std::numeric_limits<std::uint64_t>::max();

row make_row(std::uint64_t lo, std::uint64_t hi, std::string algorithm, layout where = {4, 2, 2}) {
  row r;
  r.min_bytes = lo;
  r.max_bytes = hi;
  r.where = where;
  r.algorithm = std::move(algorithm);
  return r;
}

table full_table() {
  table t;
  t.made.hosts = {"node-a", "node-b"};
  t.made.cpu = "Some CPU \"quoted\" \\ and\ttab";
  t.made.date = "2026-11-26T17:00:00Z";
  t.made.transport = "shm";
  t.made.command = "tutti-tune --output t.json";
  t.made.tune_seconds = 93.5;
  t.made.noise_rule = "the rule";
  t.model = fitted_model{.alpha_intra = 1e-6, .beta_intra = 2.5e-10, .alpha_inter = 3e-6, .beta_inter = 1.0 / 3.0,
                         .gamma = 1e-11, .switch_cost = 2e-5, .alpha_sync = 4e-7, .base_latency = 5e-7, .memory_beta = 3e-10, .cache_bytes = 1 << 20,
                         .network_on_cpus = true, .rms_relative_error = 0.05, .max_relative_error = 0.19,
                         .samples = 120};
  row a = make_row(0, 2047, "halving_doubling");
  a.tuning = {{"halving_doubling.tree_reduce_bytes", 8192}, {"halving_doubling.bruck_block_bytes", 64}};
  a.winner = measurement{"halving_doubling", {}, 30.1, 1.2, 0.01};
  a.runner_up = measurement{"ring", {{"direct.one_shot_bytes", 1}}, 80.2, 3.1, 0.0001};
  a.reason = "at 8 B..1 KiB halving_doubling beat ring";
  t.rows.push_back(a);
  t.rows.push_back(make_row(2048, inf, "ring"));
  row b = make_row(0, inf, "direct", {3, 1, 3});
  b.collective_kind = collective::allgather;
  b.dtypes = dtype_class::integer;
  t.rows.push_back(b);
  sample s;
  s.where = {4, 2, 2};
  s.bytes = 8;
  s.measured = measurement{"ring", {}, 80.2, 3.1, 0.0001};
  t.samples.push_back(s);
  return t;
}

const std::vector<candidate_info>& candidates() {
  static const std::vector<candidate_info> c = [] {
    std::vector<candidate_info> v;
    for (const char* name : {"ring", "direct", "halving_doubling"}) {
      candidate_info i{name, {}};
      i.has.fill(true);
      v.push_back(i);
    }
    v[2].has[static_cast<std::size_t>(collective::alltoall)] = false;
    return v;
  }();
  return c;
}
}  // namespace

TEST_CASE("table_write: one row and one sample a line; numbers exact; the hash ignores where it came from") {
  const table t = full_table();
  const std::string text = write_table(t);
  CHECK(text.starts_with("{\n  \"format\": \"tutti-tuning-table\", \"version\": 1,\n"));
  CHECK(text.find("\"max_bytes\": \"inf\"") != std::string::npos);
  CHECK(text.find("\\\"quoted\\\" \\\\ and\\u0009tab") != std::string::npos);
  CHECK(text.find("\"beta_inter\": 0.3333333333333333") != std::string::npos);
  // tuning values sorted by name, whatever order the row had them in
  CHECK(text.find("{\"halving_doubling.bruck_block_bytes\": 64, \"halving_doubling.tree_reduce_bytes\": 8192}") !=
        std::string::npos);
  std::size_t lines = 0;
  for (const char c : text) lines += c == '\n';
  CHECK(lines == 2 + 2 + 1 + t.rows.size() + 1 + 1 + t.samples.size() + 1 + 1);
  table moved = t;
  moved.source = "elsewhere.json";
  moved.rows[0].line = 17;
  CHECK(table_hash(moved) == table_hash(t));
  moved.rows[0].max_bytes = 2046;
  CHECK(table_hash(moved) != table_hash(t));
  CHECK(hash_text(0x1234abcdULL) == "0x000000001234abcd");
  table bad = t;
  bad.rows[0].winner->median_us = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH_AS((void)write_table(bad), doctest::Contains("median_us"), tutti::invalid_argument);
}

TEST_CASE("selection: dispatch at every boundary, b-1, b and b+1") {
  table t;
  t.source = "t.json";
  for (auto [lo, hi, name] : {std::tuple<std::uint64_t, std::uint64_t, const char*>{0, 2047, "halving_doubling"},
                              {2048, 131071, "direct"}, {131072, inf, "ring"}})
    t.rows.push_back(make_row(lo, hi, name));
  t.rows[1].tuning = {{"direct.one_shot_bytes", 4096}};
  const selection s = compile(t, {4, 2, 2}, candidates(), 0);
  auto at = [&](std::uint64_t b) { return s.find(collective::allreduce, dtype_class::floating, b).candidate; };
  CHECK(at(0) == 2);
  CHECK(at(2047) == 2);
  CHECK(at(2048) == 1);
  CHECK(at(2049) == 1);
  CHECK(at(131071) == 1);
  CHECK(at(131072) == 0);
  CHECK(at(131073) == 0);
  CHECK(at(inf) == 0);
  CHECK(s.find(collective::allreduce, dtype_class::floating, 4096).tuning != nullptr);
  CHECK(s.find(collective::allreduce, dtype_class::floating, 4096).from == &t.rows[1]);
  CHECK(s.find(collective::allreduce, dtype_class::integer, 4096).candidate == 1);  // the other class's rows
  CHECK(s.find(collective::allgather, dtype_class::floating, 4096).from == nullptr);  // no rows: the fallback
  CHECK(compile(t, {2, 1, 2}, candidates(), 1).find(collective::allreduce, dtype_class::floating, 8).candidate == 1);
}

#if TUTTI_HAVE_YAML

namespace {
// A table whose rows are on known lines: line 1 "{", 2 format, 3 "rows": [, 4.. rows.
std::string with_rows(std::vector<std::string> rows, std::string head = "\"format\": \"tutti-tuning-table\", \"version\": 1") {
  std::string text = "{\n  " + head + ",\n  \"rows\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i) text += "    " + rows[i] + (i + 1 < rows.size() ? ",\n" : "\n");
  return text + "  ]\n}\n";
}
const std::string ok_row = R"({"collective": "allreduce", "min_bytes": 0, "max_bytes": "inf", "world": 4, "nodes": 2, "algorithm": "ring"})";

void refused(const std::string& text, const std::string& message) {
  CAPTURE(text);
  CHECK_THROWS_WITH_AS((void)read_table(text, "t.json"), doctest::Contains(message.c_str()), tutti::invalid_argument);
}
void not_compiled(const std::string& text, const std::string& message) {
  CAPTURE(text);
  const table t = read_table(text, "t.json");
  CHECK_THROWS_WITH_AS((void)compile(t, {4, 2, 2}, candidates(), 0), doctest::Contains(message.c_str()), tutti::invalid_argument);
}
}  // namespace

TEST_CASE("table_json: round trip; the hash is the same however the JSON is spaced or ordered") {
  const table t = full_table();
  const std::string text = write_table(t);
  const table back = read_table(text, "round.json");
  CHECK(back.source == "round.json");
  CHECK(write_table(back) == text);
  CHECK(table_hash(back) == table_hash(t));
  REQUIRE(back.rows.size() == 3);
  CHECK(back.rows[0].line == 6);  // after "{", format, provenance, model, "rows": [
  CHECK(back.rows[1].max_bytes == inf);
  CHECK(back.rows[2].collective_kind == collective::allgather);
  CHECK(back.rows[2].dtypes == dtype_class::integer);
  CHECK(back.rows[2].where == layout{3, 1, 3});
  REQUIRE(back.rows[0].runner_up);
  CHECK(back.rows[0].runner_up->median_us == 80.2);
  CHECK(back.rows[0].runner_up->tuning == std::vector<tuning_value>{{"direct.one_shot_bytes", 1}});
  CHECK(back.model->beta_inter == 1.0 / 3.0);
  CHECK(back.model->switch_cost == 2e-5);
  CHECK(back.model->memory_beta == 3e-10);
  CHECK(back.model->alpha_sync == 4e-7);
  CHECK(back.model->base_latency == 5e-7);
  CHECK(back.model->cache_bytes == 1 << 20);
  CHECK(back.model->network_on_cpus);
  CHECK(back.made.hosts == t.made.hosts);
  CHECK(back.made.cpu == t.made.cpu);
  REQUIRE(back.samples.size() == 1);
  CHECK(back.samples[0].line == 11);
  CHECK(back.samples[0].measured.spread_us == 3.1);

  // A hand-written spelling of the same rows: other spacing, other key order, defaults left out.
  const std::string hand = R"({"rows": [
      {"algorithm": "ring", "world": 4, "nodes": 2, "max_bytes": "inf", "min_bytes": 0,
       "collective": "allreduce"}],
    "version": 1, "format": "tutti-tuning-table"})";
  const table h = read_table(hand, "hand.json");
  CHECK(h.rows[0].line == 2);
  CHECK(h.rows[0].where == layout{4, 2, 2});  // ranks_per_node = world / nodes
  CHECK(h.rows[0].dtypes == dtype_class::floating);
  CHECK(table_hash(h) == table_hash(read_table(with_rows({ok_row}), "other.json")));
  CHECK(read_table(with_rows({}), "empty.json").rows.empty());
  // A model written before alpha_sync existed priced direct's epochs as messages: read so.
  const table old = read_table(R"({"format": "tutti-tuning-table", "version": 1, "rows": [],
                                   "model": {"alpha_intra": 4e-7, "gamma": 1e-11}})", "old.json");
  REQUIRE(old.model);
  CHECK(old.model->alpha_sync == 4e-7);
  CHECK(old.model->base_latency == 0);
}

TEST_CASE("table_json: every refusal names the file, the row and the line") {
  refused("{\"format\": \"tutti-tuning-table\", \"rows\": [}", "t.json:1:");
  refused("[1, 2]", "t.json: expected an object");
  refused(with_rows({ok_row}, "\"format\": \"nccl-tuner\", \"version\": 1"),
          "t.json: field 'format' (line 2): expected \"tutti-tuning-table\", got 'nccl-tuner'");
  refused(with_rows({ok_row}, "\"format\": \"tutti-tuning-table\", \"version\": 2"),
          "t.json: field 'version' (line 2): version 2 is not one this tutti reads (it reads version 1)");
  refused(with_rows({ok_row}, "\"format\": \"tutti-tuning-table\", \"versoin\": 1"),
          "t.json: line 2: unknown field 'versoin' (did you mean 'version'?)");
  refused("{\"format\": \"tutti-tuning-table\", \"version\": 1}", "t.json: missing field 'rows'");
  refused(with_rows({ok_row, R"({"collective": "allreduce", "min_bytes": 0, "max_bytes": "inf", "world": 4, "algoritm": "ring"})"}),
          "t.json: row 2 (line 5): unknown field 'algoritm' (did you mean 'algorithm'?)");
  refused(with_rows({R"({"collective": "allreduce", "min_bytes": 0, "max_bytes": "inf", "world": 4})"}),
          "t.json: row 1 (line 4): missing field 'algorithm'");
  refused(with_rows({R"({"collective": "allreduse", "min_bytes": 0, "max_bytes": "inf", "world": 4, "algorithm": "ring"})"}),
          "t.json: row 1 (line 4): field 'collective': unknown collective 'allreduse' (did you mean 'allreduce'?)");
  refused(with_rows({R"({"collective": "allreduce", "dtype_class": "double", "min_bytes": 0, "max_bytes": "inf", "world": 4, "algorithm": "ring"})"}),
          "row 1 (line 4): field 'dtype_class': unknown dtype_class 'double'");
  refused(with_rows({ok_row, R"({"collective": "allreduce", "min_bytes": "0", "max_bytes": "inf", "world": 4, "algorithm": "ring"})"}),
          "t.json: row 2 (line 5): field 'min_bytes': expected a whole number from 0 to 18446744073709551615, got '0' (quoted, so text)");
  refused(with_rows({R"({"collective": "allreduce", "min_bytes": 0, "max_bytes": "infinity", "world": 4, "algorithm": "ring"})"}),
          "row 1 (line 4): field 'max_bytes': expected a whole number of bytes or \"inf\", got 'infinity'");
  refused(with_rows({R"({"collective": "allreduce", "min_bytes": 9, "max_bytes": 8, "world": 4, "algorithm": "ring"})"}),
          "row 1 (line 4): field 'max_bytes': 8 is below min_bytes 9");
  refused(with_rows({R"({"collective": "allreduce", "min_bytes": 0, "max_bytes": "inf", "world": 5, "nodes": 2, "ranks_per_node": 2, "algorithm": "ring"})"}),
          "row 1 (line 4): world 5 is not 2 node(s) x 2 ranks_per_node");
  refused(with_rows({R"({"collective": "allreduce", "min_bytes": 0, "max_bytes": "inf", "world": 4, "algorithm": "ring",
       "tuning": {"direct.one_shot_byte": 8}})"}),
          "t.json: row 1 (line 4): field 'tuning' (line 5): unknown tuning value 'direct.one_shot_byte' (did you mean 'direct.one_shot_bytes'?)");
  refused(with_rows({R"({"collective": "allreduce", "min_bytes": 0, "max_bytes": "inf", "world": 4, "algorithm": "ring", "tuning": {"direct.one_shot_bytes": -1}})"}),
          "row 1 (line 4): field 'tuning': field 'direct.one_shot_bytes': expected a whole number");
  refused(with_rows({R"({"collective": "allreduce", "min_bytes": 0, "min_bytes": 1, "max_bytes": "inf", "world": 4, "algorithm": "ring"})"}),
          "row 1 (line 4): field 'min_bytes': given twice (first at line 4)");
  refused(with_rows({R"({"collective": "allreduce", "min_bytes": 0, "max_bytes": "inf", "world": 4, "algorithm": "ring", "winner": {"algorithm": "ring", "median_us": "fast"}})"}),
          "row 1 (line 4): field 'winner': field 'median_us': expected a finite number, got 'fast'");
  refused(R"({"format": "tutti-tuning-table", "version": 1, "rows": [],
  "samples": [
    {"collective": "allreduce", "world": 2, "bytes": 8, "algorithm": "ring", "median_us": 1, "spred_us": 0}]})",
          "t.json: sample 1 (line 3): unknown field 'spred_us' (did you mean 'spread_us'?)");
  refused(R"({"format": "tutti-tuning-table", "version": 1, "rows": [], "model": {"network_on_cpus": 1}})",
          "t.json: model (line 1): field 'network_on_cpus': expected true or false, got '1'");
  refused(R"({"format": "tutti-tuning-table", "version": 1, "rows": [],
  "provenance": {"cpu": ["x"]}})",
          "t.json: provenance (line 2): field 'cpu': expected text, got a list");
}

TEST_CASE("compile: unknown algorithm, missing collective, overlap and gap name the row and line") {
  const std::string hd = R"({"collective": "allreduce", "min_bytes": 0, "max_bytes": 2047, "world": 4, "nodes": 2, "algorithm": "halving_doubling"})";
  not_compiled(with_rows({R"({"collective": "allreduce", "min_bytes": 0, "max_bytes": "inf", "world": 4, "nodes": 2, "algorithm": "tree"})"}),
               "t.json: row 1 (line 4): algorithm 'tree' is not compiled into this tuned<ring, direct, halving_doubling>");
  not_compiled(with_rows({R"({"collective": "alltoall", "min_bytes": 0, "max_bytes": "inf", "world": 4, "nodes": 2, "algorithm": "halving_doubling"})"}),
               "t.json: row 1 (line 4): algorithm 'halving_doubling' has no alltoall");
  not_compiled(with_rows({hd, R"({"collective": "allreduce", "min_bytes": 2000, "max_bytes": "inf", "world": 4, "nodes": 2, "algorithm": "ring"})"}),
               "t.json: row 2 (line 5): overlaps t.json: row 1 (line 4): both cover 2000 bytes");
  not_compiled(with_rows({hd, R"({"collective": "allreduce", "min_bytes": 4096, "max_bytes": "inf", "world": 4, "nodes": 2, "algorithm": "ring"})"}),
               "t.json: row 2 (line 5): starts at 4096 bytes, leaving 2048..4095 bytes of allreduce (float) uncovered");
  not_compiled(with_rows({hd}), "t.json: row 1 (line 4): ends at 2047 bytes and no row covers larger allreduce (float)");
  not_compiled(with_rows({R"({"collective": "allreduce", "min_bytes": 8, "max_bytes": "inf", "world": 4, "nodes": 2, "algorithm": "ring"})"}),
               "row 1 (line 4): starts at 8 bytes, leaving 0..7 bytes");
  // Rows of another layout are not this communicator's business.
  CHECK_NOTHROW((void)compile(read_table(with_rows({hd}), "t.json"), {2, 1, 2}, candidates(), 0));
}

TEST_CASE("default table: reads, and compiles for every layout it has rows for") {
  const table t = read_table(default_table_json, std::string(default_table_source));
  CHECK(std::string(default_table_source).starts_with("the built-in default table (tuning/default.json, "));
  CHECK_FALSE(t.rows.empty());
  // Every algorithm it names as a candidate (the lead's real table may name any tutti-tune measured).
  std::vector<candidate_info> named;
  for (const row& r : t.rows)
    if (std::none_of(named.begin(), named.end(), [&](const candidate_info& c) { return c.name == r.algorithm; })) {
      named.push_back({r.algorithm, {}});
      named.back().has.fill(true);
    }
  for (const row& r : t.rows) {
    CAPTURE(r.line);
    const selection s = compile(t, r.where, named, 0);
    CHECK(s.find(r.collective_kind, r.dtypes, r.min_bytes).from == &r);
  }
}

TEST_CASE("table_json: read_table_file names the path it could not read") {
  CHECK_THROWS_WITH_AS((void)read_table_file("/nonexistent/table.json"),
                       doctest::Contains("cannot read tuning table '/nonexistent/table.json'"), tutti::invalid_argument);
}

#endif
