// The job-naming rule (bootstrap/job_name.hpp) and where it is applied: job_id_from_env() makes a
// launcher's id into a job id and refuses an invalid TUTTI_JOB_ID; tutti-run's --job-id and
// transport::shm read the same rule (tests/tools/usage.sh, tests/transport/shm_test.cpp).
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tutti/bootstrap/job_name.hpp"
#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/core/error.hpp"

namespace job_name = tutti::job_name;

namespace {

//! Every variable job_id_from_env() reads, unset for one scope and restored after.
class job_env {
 public:
  job_env() {
    for (const char* name : names) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      ::unsetenv(name);
    }
  }
  job_env(const job_env&) = delete;
  job_env& operator=(const job_env&) = delete;
  ~job_env() {
    for (const auto& [name, value] : saved_) {
      if (value) ::setenv(name.c_str(), value->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
  }
  static void set(const char* name, const char* value) { ::setenv(name, value, 1); }

 private:
  static constexpr const char* names[] = {"TUTTI_JOB_ID",  "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE",
                                          "SLURM_JOB_ID",  "SLURM_STEP_ID",           "TORCHELASTIC_RUN_ID"};
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("job_name: the alphabet is [A-Za-z0-9_-], 1 to 64 characters") {
  CHECK(job_name::valid("my_Job-42"));
  CHECK(job_name::valid(std::string(64, 'a')));
  CHECK_FALSE(job_name::valid(std::string(65, 'a')));
  CHECK_FALSE(job_name::valid(""));
  for (const char* bad : {"a.b", "a/b", "bad id", "a:b", "é"}) {
    INFO(bad);
    CHECK_FALSE(job_name::valid(bad));
  }
  // Transports may append suffixes to a full-length id, up to what a segment name holds.
  CHECK(job_name::valid(std::string(64, 'a') + "-s3-n12", job_name::max_segment_job_length));
  CHECK(job_name::segment_name("j1", 3) == "/tutti-j1.3");
  CHECK(job_name::segment_prefix("j1") == "tutti-j1.");
  CHECK(job_name::segment_name(std::string(job_name::max_segment_job_length, 'a'), (1 << 24) - 1).size() - 1 <= 255);
}

TEST_CASE("job_name: checked() refuses an invalid id, naming where it came from and the rule") {
  CHECK(job_name::checked("job-1", "TUTTI_JOB_ID") == "job-1");
  try {
    (void)job_name::checked("a.b", "TUTTI_JOB_ID");
    FAIL("an id with '.' was accepted");
  } catch (const tutti::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(contains(what, "TUTTI_JOB_ID='a.b'"));
    CHECK(contains(what, job_name::rule));
  }
}

TEST_CASE("job_name: a launcher's id is made into a valid job id, the same on every rank") {
  CHECK(job_name::from_launcher("slurm-42-0") == "slurm-42-0");
  CHECK(job_name::from_launcher("pmix-slurm.pmix.42.0") == "pmix-slurm_pmix_42_0");
  CHECK(job_name::from_launcher("") == "_");
  const std::string long_a = "pmix-" + std::string(100, 'x') + "a";
  const std::string long_b = "pmix-" + std::string(100, 'x') + "b";
  const std::string a = job_name::from_launcher(long_a);
  CHECK(job_name::valid(a));
  CHECK(a.size() == job_name::max_length);
  CHECK(a == job_name::from_launcher(long_a));        // deterministic: every rank computes the same
  CHECK(a != job_name::from_launcher(long_b));        // ids that differ only past the cut stay apart
  CHECK(a.starts_with("pmix-xxxx"));
}

TEST_CASE("job_id_from_env: a launcher's odd id still works; an invalid TUTTI_JOB_ID is refused") {
  job_env env;
  job_env::set("PMIX_NAMESPACE", "slurm.pmix.42.0");
  CHECK(tutti::job_id_from_env() == "pmix-slurm_pmix_42_0");
  job_env::set("TUTTI_JOB_ID", "job-1234");
  CHECK(tutti::job_id_from_env() == "job-1234");
  job_env::set("TUTTI_JOB_ID", "my/job");
  try {
    (void)tutti::job_id_from_env();
    FAIL("TUTTI_JOB_ID=my/job was accepted");
  } catch (const tutti::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(contains(what, "TUTTI_JOB_ID='my/job' is not a valid job id"));
    CHECK(contains(what, "1 to 64 characters of [A-Za-z0-9_-]"));
  }
}
