//! @file config_test.cpp  tutti::config (strict TUTTI_* parsing) and tutti::rank_info_from_env().
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"

namespace {

using namespace std::chrono_literals;

//! Sets variables for one scope and restores what was there before (set or unset) on exit.
class env_guard {
 public:
  env_guard() = default;
  env_guard(const env_guard&) = delete;
  env_guard& operator=(const env_guard&) = delete;
  explicit env_guard(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [name, value] : vars) set(name, value);
  }
  ~env_guard() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else ::unsetenv(it->first.c_str());
    }
  }
  void set(const char* name, const char* value) {
    remember(name);
    ::setenv(name, value, 1);
  }
  void unset(const char* name) {
    remember(name);
    ::unsetenv(name);
  }

 private:
  void remember(const char* name) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

//! Every variable rank_info_from_env() reads, so a test starts from a clean launcher environment
//! (the test runner itself might have been started by mpirun, srun or torchrun).
constexpr const char* launcher_vars[] = {
    "TUTTI_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK",
    "TUTTI_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE",
    "TUTTI_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK",
    "TUTTI_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE",
    "LOCAL_WORLD_SIZE", "TUTTI_JOB_ID", "TORCHELASTIC_RUN_ID", "GROUP_RANK", "SLURM_JOB_ID"};

void clear_launcher_env(env_guard& g) {
  for (const char* v : launcher_vars) g.unset(v);
}

//! The message of the tutti::invalid_argument that fn throws ("" if it throws nothing).
template <class F> std::string invalid_argument_message(F&& fn) {
  try {
    fn();
  } catch (const tutti::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::chrono::nanoseconds seconds_or_throw(const char* name) {
  return tutti::config::seconds(name, std::chrono::seconds(1));
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("env_guard restores a variable that existed and removes one that did not") {
  ::setenv("TUTTI_TEST_GUARD_OLD", "before", 1);
  ::unsetenv("TUTTI_TEST_GUARD_NEW");
  {
    env_guard g{{"TUTTI_TEST_GUARD_OLD", "during"}, {"TUTTI_TEST_GUARD_NEW", "x"}};
    CHECK(std::string(std::getenv("TUTTI_TEST_GUARD_OLD")) == "during");
    CHECK(std::string(std::getenv("TUTTI_TEST_GUARD_NEW")) == "x");
  }
  REQUIRE(std::getenv("TUTTI_TEST_GUARD_OLD") != nullptr);
  CHECK(std::string(std::getenv("TUTTI_TEST_GUARD_OLD")) == "before");
  CHECK(std::getenv("TUTTI_TEST_GUARD_NEW") == nullptr);
  ::unsetenv("TUTTI_TEST_GUARD_OLD");
}

TEST_CASE("config::raw treats unset and empty alike") {
  env_guard g;
  g.unset("TUTTI_TEST_RAW");
  CHECK_FALSE(tutti::config::raw("TUTTI_TEST_RAW").has_value());
  g.set("TUTTI_TEST_RAW", "");
  CHECK_FALSE(tutti::config::raw("TUTTI_TEST_RAW").has_value());
  g.set("TUTTI_TEST_RAW", " x ");
  CHECK(tutti::config::raw("TUTTI_TEST_RAW") == std::optional<std::string>(" x "));
}

TEST_CASE("config::integer: fallback, valid values and bounds") {
  using tutti::config::integer;
  env_guard g;
  g.unset("TUTTI_TEST_INT");
  CHECK(integer("TUTTI_TEST_INT", 42, 0, 100) == 42);
  g.set("TUTTI_TEST_INT", "");
  CHECK(integer("TUTTI_TEST_INT", 42, 0, 100) == 42);
  g.set("TUTTI_TEST_INT", "7");
  CHECK(integer("TUTTI_TEST_INT", 42, 0, 100) == 7);
  g.set("TUTTI_TEST_INT", "0");
  CHECK(integer("TUTTI_TEST_INT", 42, 0, 100) == 0);
  g.set("TUTTI_TEST_INT", "100");
  CHECK(integer("TUTTI_TEST_INT", 42, 0, 100) == 100);
  g.set("TUTTI_TEST_INT", "-5");
  CHECK(integer("TUTTI_TEST_INT", 0, -10, 10) == -5);
  g.set("TUTTI_TEST_INT", "9223372036854775807");
  CHECK(integer("TUTTI_TEST_INT", 0, 0, std::numeric_limits<long long>::max()) ==
        std::numeric_limits<long long>::max());
}

TEST_CASE("config::integer: bad values throw invalid_argument naming the variable and the value") {
  using tutti::config::integer;
  for (const char* bad : {"abc", "12x", "x12", "1.5", " 3", "3 ", "0x10", "99999999999999999999"}) {
    CAPTURE(bad);
    env_guard g{{"TUTTI_TEST_INT_BAD", bad}};
    const std::string msg = invalid_argument_message([] { (void)integer("TUTTI_TEST_INT_BAD", 1, 0, 1000); });
    CHECK(contains(msg, "TUTTI_TEST_INT_BAD"));
    CHECK(contains(msg, bad));
  }
  for (const char* out_of_range : {"101", "-1"}) {
    CAPTURE(out_of_range);
    env_guard g{{"TUTTI_TEST_INT_RANGE", out_of_range}};
    const std::string msg = invalid_argument_message([] { (void)integer("TUTTI_TEST_INT_RANGE", 1, 0, 100); });
    CHECK(contains(msg, "TUTTI_TEST_INT_RANGE"));
    CHECK(contains(msg, out_of_range));
    CHECK(contains(msg, "100"));  // names the allowed range too
  }
  // invalid_argument is a tutti::error, so users can catch the whole family.
  env_guard g{{"TUTTI_TEST_INT_BASE", "nope"}};
  CHECK_THROWS_AS((void)integer("TUTTI_TEST_INT_BASE", 1, 0, 10), tutti::error);
}

TEST_CASE("config::bytes: plain numbers and K/M/G binary suffixes") {
  using tutti::config::bytes;
  constexpr std::size_t big = std::size_t{1} << 40;
  env_guard g;
  g.unset("TUTTI_TEST_BYTES");
  CHECK(bytes("TUTTI_TEST_BYTES", 123, 0, big) == 123);
  const std::pair<const char*, std::size_t> cases[] = {
      {"0", 0},
      {"4096", 4096},
      {"512K", 512u << 10},
      {"512k", 512u << 10},
      {"64M", std::size_t{64} << 20},
      {"64m", std::size_t{64} << 20},
      {"2G", std::size_t{2} << 30},
      {"3g", std::size_t{3} << 30},
      {"1K", 1024},
  };
  for (const auto& c : cases) {
    const char* text = c.first;  // (not a structured binding: clang 14 cannot capture those in CAPTURE)
    CAPTURE(text);
    g.set("TUTTI_TEST_BYTES", text);
    CHECK(bytes("TUTTI_TEST_BYTES", 123, 0, big) == c.second);
  }
  // Bounds are inclusive and apply after the suffix.
  g.set("TUTTI_TEST_BYTES", "1M");
  CHECK(bytes("TUTTI_TEST_BYTES", 0, std::size_t{1} << 20, std::size_t{1} << 20) == std::size_t{1} << 20);
}

TEST_CASE("config::bytes: bad values throw invalid_argument naming the variable and the value") {
  using tutti::config::bytes;
  for (const char* bad : {"abc", "12x", "-1", "-1K", "K", "1.5M", "12KB", "1T", " 1K", "0x10", "99999999999999999999"}) {
    CAPTURE(bad);
    env_guard g{{"TUTTI_TEST_BYTES_BAD", bad}};
    const std::string msg = invalid_argument_message([] { (void)bytes("TUTTI_TEST_BYTES_BAD", 1, 0, std::size_t{1} << 40); });
    CHECK(contains(msg, "TUTTI_TEST_BYTES_BAD"));
    CHECK(contains(msg, bad));
  }
  // Out of range, before and after the suffix is applied, and a suffix that overflows size_t.
  for (const char* out_of_range : {"1025", "2K", "1G", "17179869184G"}) {
    CAPTURE(out_of_range);
    env_guard g{{"TUTTI_TEST_BYTES_RANGE", out_of_range}};
    const std::string msg = invalid_argument_message([] { (void)bytes("TUTTI_TEST_BYTES_RANGE", 1, 1, 1024); });
    CHECK(contains(msg, "TUTTI_TEST_BYTES_RANGE"));
    CHECK(contains(msg, out_of_range));
  }
  env_guard g{{"TUTTI_TEST_BYTES_LOW", "1K"}};
  const std::string msg = invalid_argument_message([] { (void)bytes("TUTTI_TEST_BYTES_LOW", 1, 4096, 8192); });
  CHECK(contains(msg, "TUTTI_TEST_BYTES_LOW"));
  CHECK(contains(msg, "1K"));
}

TEST_CASE("config::seconds: integers and fractions, fallback when unset") {
  using tutti::config::seconds;
  env_guard g;
  g.unset("TUTTI_TEST_SECONDS");
  CHECK(seconds("TUTTI_TEST_SECONDS", 7s) == std::chrono::nanoseconds(7s));
  g.set("TUTTI_TEST_SECONDS", "300");
  CHECK(seconds("TUTTI_TEST_SECONDS", 7s) == std::chrono::nanoseconds(300s));
  g.set("TUTTI_TEST_SECONDS", "0.5");
  CHECK(seconds("TUTTI_TEST_SECONDS", 7s) == std::chrono::nanoseconds(500ms));
  g.set("TUTTI_TEST_SECONDS", "0.25");
  CHECK(seconds("TUTTI_TEST_SECONDS", 7s) == std::chrono::nanoseconds(250ms));
  g.set("TUTTI_TEST_SECONDS", "2.5");
  CHECK(seconds("TUTTI_TEST_SECONDS", 7s) == std::chrono::nanoseconds(2500ms));
}

TEST_CASE("config::seconds: zero, negative, non-numbers and huge values throw, naming variable and value") {
  using tutti::config::seconds;
  for (const char* bad : {"0", "0.0", "-1", "-0.5", "abc", "12x", "5s", "nan", "inf", "1e300", "20000000"}) {
    CAPTURE(bad);
    env_guard g{{"TUTTI_TEST_SECONDS_BAD", bad}};
    const std::string msg = invalid_argument_message([] { (void)seconds("TUTTI_TEST_SECONDS_BAD", 1s); });
    CHECK(contains(msg, "TUTTI_TEST_SECONDS_BAD"));
    CHECK(contains(msg, bad));
  }
}

TEST_CASE("config::seconds: a positive value below 1 ns is rejected or rounded up, never a zero timeout") {
  // 1e-10 passes the "positive" check; truncating it to 0 ns would make every wait time out at once.
  env_guard g{{"TUTTI_TEST_SECONDS_TINY", "1e-10"}};
  std::chrono::nanoseconds got{-1};
  const std::string msg = invalid_argument_message([&] { got = seconds_or_throw("TUTTI_TEST_SECONDS_TINY"); });
  if (msg.empty()) CHECK(got > std::chrono::nanoseconds(0));
  else CHECK(contains(msg, "TUTTI_TEST_SECONDS_TINY"));
}

TEST_CASE("config::flag: the accepted spellings, fallback, and a bad value") {
  using tutti::config::flag;
  env_guard g;
  g.unset("TUTTI_TEST_FLAG");
  CHECK(flag("TUTTI_TEST_FLAG", true) == true);
  CHECK(flag("TUTTI_TEST_FLAG", false) == false);
  for (const char* yes : {"1", "true", "on", "yes"}) {
    CAPTURE(yes);
    g.set("TUTTI_TEST_FLAG", yes);
    CHECK(flag("TUTTI_TEST_FLAG", false) == true);
  }
  for (const char* no : {"0", "false", "off", "no"}) {
    CAPTURE(no);
    g.set("TUTTI_TEST_FLAG", no);
    CHECK(flag("TUTTI_TEST_FLAG", true) == false);
  }
  for (const char* bad : {"2", "maybe", "tru", "y"}) {
    CAPTURE(bad);
    g.set("TUTTI_TEST_FLAG", bad);
    const std::string msg = invalid_argument_message([] { (void)flag("TUTTI_TEST_FLAG", true); });
    CHECK(contains(msg, "TUTTI_TEST_FLAG"));
    CHECK(contains(msg, bad));
  }
}

TEST_CASE("config::timeout reads TUTTI_TIMEOUT, 300 s by default") {
  env_guard g;
  g.unset("TUTTI_TIMEOUT");
  CHECK(tutti::config::timeout() == std::chrono::nanoseconds(300s));
  g.set("TUTTI_TIMEOUT", "20");
  CHECK(tutti::config::timeout() == std::chrono::nanoseconds(20s));
  g.set("TUTTI_TIMEOUT", "0.2");
  CHECK(tutti::config::timeout() == std::chrono::nanoseconds(200ms));
  g.set("TUTTI_TIMEOUT", "0");
  const std::string msg = invalid_argument_message([] { (void)tutti::config::timeout(); });
  CHECK(contains(msg, "TUTTI_TIMEOUT"));
  CHECK(contains(msg, "'0'"));
}

TEST_CASE("rank_info_from_env: no launcher variables means rank 0 of 1") {
  env_guard g;
  clear_launcher_env(g);
  const tutti::rank_info info = tutti::rank_info_from_env();
  CHECK(info.rank == 0);
  CHECK(info.world_size == 1);
  CHECK(info.local_rank == 0);
  CHECK(info.local_size == 1);
  // Without any launcher's job id, ranks started together are told apart by their parent.
  CHECK(info.job_id == "ppid-" + std::to_string(::getppid()));
  CHECK(info.launcher == "none");
}

TEST_CASE("rank_info_from_env: TUTTI_* variables") {
  env_guard g;
  clear_launcher_env(g);
  g.set("TUTTI_RANK", "5");
  g.set("TUTTI_WORLD_SIZE", "6");
  g.set("TUTTI_LOCAL_RANK", "1");
  g.set("TUTTI_LOCAL_SIZE", "2");
  g.set("TUTTI_JOB_ID", "job-1234");
  const tutti::rank_info info = tutti::rank_info_from_env();
  CHECK(info.rank == 5);
  CHECK(info.world_size == 6);
  CHECK(info.local_rank == 1);
  CHECK(info.local_size == 2);
  CHECK(info.job_id == "job-1234");
}

TEST_CASE("rank_info_from_env: without node variables every rank is on one node") {
  env_guard g;
  clear_launcher_env(g);
  g.set("TUTTI_RANK", "2");
  g.set("TUTTI_WORLD_SIZE", "3");
  const tutti::rank_info info = tutti::rank_info_from_env();
  CHECK(info.rank == 2);
  CHECK(info.world_size == 3);
  CHECK(info.local_rank == 2);
  CHECK(info.local_size == 3);
}

TEST_CASE("rank_info_from_env: Open MPI OMPI_COMM_WORLD_* fallback") {
  env_guard g;
  clear_launcher_env(g);
  g.set("OMPI_COMM_WORLD_RANK", "3");
  g.set("OMPI_COMM_WORLD_SIZE", "5");
  g.set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  g.set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  tutti::rank_info info = tutti::rank_info_from_env();
  CHECK(info.rank == 3);
  CHECK(info.world_size == 5);
  CHECK(info.local_rank == 0);
  CHECK(info.local_size == 2);

  // TUTTI_* takes precedence over Open MPI's variables.
  g.set("TUTTI_RANK", "1");
  g.set("TUTTI_WORLD_SIZE", "4");
  g.set("TUTTI_LOCAL_RANK", "1");
  g.set("TUTTI_LOCAL_SIZE", "4");
  info = tutti::rank_info_from_env();
  CHECK(info.rank == 1);
  CHECK(info.world_size == 4);
  CHECK(info.local_rank == 1);
  CHECK(info.local_size == 4);
}

TEST_CASE("rank_info_from_env: torchrun RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE") {
  env_guard g;
  clear_launcher_env(g);
  g.set("RANK", "6");
  g.set("WORLD_SIZE", "8");
  tutti::rank_info info = tutti::rank_info_from_env();
  CHECK(info.rank == 6);
  CHECK(info.world_size == 8);
  CHECK(info.local_rank == 6);
  CHECK(info.local_size == 8);
  g.set("LOCAL_RANK", "2");
  g.set("LOCAL_WORLD_SIZE", "4");
  info = tutti::rank_info_from_env();
  CHECK(info.local_rank == 2);
  CHECK(info.local_size == 4);
  // Open MPI takes precedence over torchrun.
  g.unset("LOCAL_RANK");
  g.unset("LOCAL_WORLD_SIZE");
  g.set("OMPI_COMM_WORLD_RANK", "0");
  g.set("OMPI_COMM_WORLD_SIZE", "2");
  info = tutti::rank_info_from_env();
  CHECK(info.rank == 0);
  CHECK(info.world_size == 2);
}

TEST_CASE("rank_info_from_env: PMI (MPICH / Hydra) and Slurm variables") {
  env_guard g;
  clear_launcher_env(g);
  g.set("PMI_RANK", "3");
  g.set("PMI_SIZE", "7");
  g.set("MPI_LOCALRANKID", "1");
  g.set("MPI_LOCALNRANKS", "3");
  tutti::rank_info info = tutti::rank_info_from_env();
  CHECK(info.rank == 3);
  CHECK(info.world_size == 7);
  CHECK(info.local_rank == 1);
  CHECK(info.local_size == 3);

  env_guard s;
  clear_launcher_env(s);
  s.set("SLURM_PROCID", "4");
  s.set("SLURM_NTASKS", "6");
  s.set("SLURM_LOCALID", "0");
  s.set("SLURM_NTASKS_PER_NODE", "2");
  info = tutti::rank_info_from_env();
  CHECK(info.rank == 4);
  CHECK(info.world_size == 6);
  CHECK(info.local_rank == 0);
  CHECK(info.local_size == 2);
}

TEST_CASE("rank_info_from_env: torchrun workers started by srun take their rank from torchrun, not from Slurm") {
  // `srun --nodes=2 --ntasks-per-node=1 torchrun --nproc-per-node=8 train.py`, the usual multi-node
  // recipe: Slurm's variables describe the torchrun agent (task 1 of 2 on this node), torchrun's
  // describe this worker (rank 9 of 16, 1 of 8 on this node). Reading Slurm's would give every
  // worker on a node the same rank, with a description that still validates.
  env_guard g;
  clear_launcher_env(g);
  g.set("SLURM_JOB_ID", "4242");
  g.set("SLURM_PROCID", "1");
  g.set("SLURM_NTASKS", "2");
  g.set("SLURM_LOCALID", "0");
  g.set("SLURM_NTASKS_PER_NODE", "1");
  g.set("TORCHELASTIC_RUN_ID", "4242");
  g.set("GROUP_RANK", "1");
  g.set("RANK", "9");
  g.set("WORLD_SIZE", "16");
  g.set("LOCAL_RANK", "1");
  g.set("LOCAL_WORLD_SIZE", "8");
  const tutti::rank_info info = tutti::rank_info_from_env();
  CHECK(info.rank == 9);
  CHECK(info.world_size == 16);
  CHECK(info.local_rank == 1);
  CHECK(info.local_size == 8);
}

TEST_CASE("rank_info_from_env: inconsistent or malformed values throw invalid_argument naming the value") {
  struct bad_case {
    std::vector<std::pair<const char*, const char*>> vars;
    std::vector<std::string> must_mention;
  };
  const bad_case cases[] = {
      {{{"TUTTI_RANK", "4"}, {"TUTTI_WORLD_SIZE", "4"}}, {"rank=4", "4"}},
      {{{"TUTTI_RANK", "9"}, {"TUTTI_WORLD_SIZE", "4"}}, {"rank=9"}},
      {{{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}}, {"rank=2"}},
      {{{"RANK", "8"}, {"WORLD_SIZE", "8"}}, {"rank=8"}},
      {{{"TUTTI_RANK", "1"}}, {"rank=1"}},  // world defaults to 1
      {{{"TUTTI_WORLD_SIZE", "0"}}, {"world_size=0"}},
      {{{"TUTTI_RANK", "0"}, {"TUTTI_WORLD_SIZE", "4"}, {"TUTTI_LOCAL_SIZE", "5"}}, {"local_size=5"}},
      {{{"TUTTI_RANK", "0"}, {"TUTTI_WORLD_SIZE", "4"}, {"TUTTI_LOCAL_RANK", "2"}, {"TUTTI_LOCAL_SIZE", "2"}},
       {"local_rank=2"}},
      {{{"TUTTI_RANK", "-1"}, {"TUTTI_WORLD_SIZE", "4"}}, {"TUTTI_RANK", "-1"}},
      {{{"TUTTI_RANK", "one"}, {"TUTTI_WORLD_SIZE", "4"}}, {"TUTTI_RANK", "one"}},
      {{{"RANK", "0"}, {"WORLD_SIZE", "4x"}}, {"WORLD_SIZE", "4x"}},
      {{{"TUTTI_RANK", "0"}, {"TUTTI_WORLD_SIZE", "99999999999"}}, {"TUTTI_WORLD_SIZE", "99999999999"}},
  };
  for (const auto& c : cases) {
    env_guard g;
    clear_launcher_env(g);
    std::string described;
    for (const auto& [name, value] : c.vars) {
      g.set(name, value);
      described += std::string(name) + "=" + value + " ";
    }
    CAPTURE(described);
    const std::string msg = invalid_argument_message([] { (void)tutti::rank_info_from_env(); });
    CAPTURE(msg);
    CHECK_FALSE(msg.empty());
    for (const auto& word : c.must_mention) CHECK(contains(msg, word));
  }
}

TEST_CASE("rank_info::validate accepts a consistent description and names the bad field otherwise") {
  tutti::rank_info ok;
  ok.rank = 3;
  ok.world_size = 4;
  ok.local_rank = 1;
  ok.local_size = 2;
  CHECK_NOTHROW(ok.validate());
  tutti::rank_info bad = ok;
  bad.rank = 4;
  const std::string msg = invalid_argument_message([&] { bad.validate(); });
  CHECK(contains(msg, "rank=4"));
  CHECK(contains(msg, "[0, 4)"));
}
