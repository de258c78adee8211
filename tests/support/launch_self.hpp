//! @file launch_self.hpp  Tests that need a real launcher: this test program started again as the
//! ranks of a job under tutti-run (job_key_launch_test.cpp, shm_segments_test.cpp). The ranks run a
//! test case of the same program that is skipped unless `--no-skip` is given.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tutti_test {

struct launch_spec {
  std::string tutti_run;                 //!< tutti-run's path
  std::vector<std::string> run_options;  //!< before "--": "-n", "2", ...
  std::string test_cases;                //!< the ranks' --test-case filter
  //! Set (a value) or unset (nullopt) in the launcher's environment, which the ranks inherit.
  std::vector<std::pair<std::string, std::optional<std::string>>> environment;
  std::string out_file, err_file;        //!< the launcher's stdout and stderr (the same file: both)
};

//! Forks and execs tutti-run as `spec` says (the child ends itself after 90 s whatever happens);
//! returns its pid.
inline pid_t launch_self(const launch_spec& spec) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const pid_t launcher = ::fork();
  if (launcher != 0) return launcher;
  ::alarm(90);  // bounded even if everything else fails
  for (const auto& [name, value] : spec.environment)
    if (value) ::setenv(name.c_str(), value->c_str(), 1);
    else ::unsetenv(name.c_str());
  const int out = ::open(spec.out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int err = spec.err_file == spec.out_file ? out : ::open(spec.err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(out, 1);
  ::dup2(err, 2);
  std::vector<std::string> args{"tutti-run"};
  args.insert(args.end(), spec.run_options.begin(), spec.run_options.end());
  args.insert(args.end(), {"--", self, "--no-skip", "--test-case=" + spec.test_cases});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(spec.tutti_run.c_str(), argv.data());
  ::_exit(127);
}

//! Waits for `pid` until `until`, then kills it (a hung job fails its test, never hangs it);
//! returns its wait status.
inline int wait_bounded(pid_t pid, std::chrono::steady_clock::time_point until) {
  int status = -1;
  while (::waitpid(pid, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (std::chrono::steady_clock::now() >= until) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  return status;
}

}  // namespace tutti_test
