//! @file tutti_run.cpp  tutti-run, the local launcher: starts N ranks of a program on this host
//! with the TUTTI_* variables tutti's bootstrap reads, prefixes their output by rank, stops the
//! whole job when one rank fails or the launcher is interrupted, and removes the job's
//! shared-memory leftovers. With --max-restarts R it starts the whole job again after a failure,
//! at most R times (Determined's max_restarts; the ranks resume from their checkpoints).
//!
//! One process, one poll() loop, no threads. Signals reach the loop through a self-pipe; children
//! are reaped with waitpid(WNOHANG) on every turn. Each rank leads its own process group, so a stop
//! signal also reaches what the rank started (a shell's children, data-loader workers).
//! Linux only (prctl, pipe2, execvpe); libc and libstdc++ only, plus tutti's job-naming rule
//! (bootstrap/job_name.hpp, itself standard-library only), so launcher and ranks agree on it.

#include <dirent.h>
#include <sched.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tutti/bootstrap/job_name.hpp"
#include "tutti_run/command_line.hpp"

extern char** environ;

namespace {

using steady = std::chrono::steady_clock;

constexpr std::string_view synopsis =
    "usage: tutti-run -n N [--ranks-per-node K] [--bind core|none] [--job-id ID] [--linger SECONDS]\n"
    "                 [--grace SECONDS] [--max-restarts R] [--no-prefix]\n"
    "                 [--] prog [args...]\n"
    "       tutti-run --launcher --max-restarts R [--grace SECONDS] [--] launcher [args...]\n";

constexpr std::string_view help_text =
    "Starts N ranks of prog on this host, as tutti's bootstrap expects them.\n"
    "\n"
    "  -n N               number of ranks (1..65536)\n"
    "  --ranks-per-node K simulate nodes of K ranks on this host: rank k gets TUTTI_NODE_ID=sim<k/K>,\n"
    "                     TUTTI_LOCAL_RANK=k%K and its node's TUTTI_LOCAL_SIZE (the last node may\n"
    "                     be smaller), for testing hierarchical algorithms (default: one node)\n"
    "  --bind core|none   core: rank k runs only on the (k mod C)-th of the C CPUs tutti-run may\n"
    "                     use, so that launches place ranks alike (measurements on an oversubscribed\n"
    "                     machine otherwise differ with where the scheduler put them); none: the\n"
    "                     scheduler's choice (default)\n"
    "  --job-id ID        job id, 1..64 of [A-Za-z0-9_-] (default: a fresh unique id)\n"
    "  --linger SECONDS   after a rank fails, how long the others get to notice and report it\n"
    "                     (a tutti rank raises peer_lost within milliseconds) before they are\n"
    "                     sent SIGTERM (default 2)\n"
    "  --grace SECONDS    how long ranks get to exit after a stop signal before SIGKILL\n"
    "                     (default 3)\n"
    "  --max-restarts R   after a rank fails, stop the job as usual, then start all N ranks again,\n"
    "                     at most R times (0..1000, default 0), each restart said with the failure\n"
    "                     that caused it; a program resumes from its latest checkpoint (tutti's\n"
    "                     trainer does). Not after an interruption (SIGINT, SIGTERM, SIGHUP)\n"
    "  --launcher         prog is itself the job's launcher (mpirun, srun, a script starting the\n"
    "                     ranks on several hosts): run it alone, unprefixed, with no variable of\n"
    "                     tutti-run's but TUTTI_RESTART and TUTTI_MAX_RESTARTS, and start it again\n"
    "                     (--max-restarts) when it exits non-zero: restarts across hosts\n"
    "  --no-prefix        no \"[rank k] \" prefix: output bytes pass unchanged\n"
    "  -h, --help         this text\n"
    "\n"
    "Rank k runs with TUTTI_RANK=k TUTTI_WORLD_SIZE=N TUTTI_LOCAL_RANK=k TUTTI_LOCAL_SIZE=N\n"
    "TUTTI_JOB_ID=ID TUTTI_RESTART=A (0 at the first start, A at the A-th restart)\n"
    "TUTTI_MAX_RESTARTS=R added to the environment, and, unless already set, TUTTI_JOB_KEY (a fresh\n"
    "random key, for the tcp_store's authentication), TUTTI_STORE_ADDR=127.0.0.1:PORT (a free\n"
    "port) and TUTTI_LINE_BUFFERED=1 (a program that includes tutti's headers then flushes stdout\n"
    "at every newline, so what a rank printed before it crashed is not lost in a pipe's buffer;\n"
    "set it to 0 to keep full buffering). Its stdout and stderr go to tutti-run's stdout and\n"
    "stderr a whole line at a time (lines over 64 KiB in pieces), prefixed \"[rank k] \"; a last\n"
    "line without newline gets one. Rank 0 reads tutti-run's stdin unless that is a terminal;\n"
    "every other rank reads /dev/null.\n"
    "\n"
    "SIGINT, SIGTERM and SIGHUP are forwarded to every rank (and what it started); a rank that exits\n"
    "non-zero or is killed stops the others with SIGTERM once the linger time has passed (at once\n"
    "if they all exit before). Ranks still running after the grace\n"
    "period, or when a second signal arrives, are sent SIGKILL. When all ranks are gone, files in\n"
    "/dev/shm named tutti-ID.* (the shm transport's segments) and owned by you are removed.\n"
    "\n"
    "Exit status: 0 when every rank exits 0 (at the last start); 128+signal when tutti-run was\n"
    "interrupted; 1 when a rank failed and no restart was left (the last failure is said); 2 on\n"
    "bad usage.\n";

constexpr std::size_t read_chunk = 64 * 1024;
constexpr std::size_t max_partial_line = 64 * 1024;  //!< a longer line is written in pieces
constexpr std::size_t drain_limit = 4 << 20;         //!< bytes read from a pipe after its rank exits
constexpr int exit_failure = 1;
constexpr int exit_usage = 2;

// ---------------------------------------------------------------------------------------------
// Writing. tutti-run is the only writer of its stdout and stderr, so composing each batch of whole
// lines into one buffer and writing it fully is enough to keep ranks' lines apart.

struct sink {
  int fd;
  bool broken = false;       //!< a write failed: further output is dropped
  bool reader_gone = false;  //!< it failed with EPIPE: whoever read it has exited
};

sink sinks[2] = {{STDOUT_FILENO}, {STDERR_FILENO}};

void write_all(sink& s, std::string_view data) {
  while (!data.empty() && !s.broken) {
    const ssize_t w = ::write(s.fd, data.data(), data.size());
    if (w > 0) {
      data.remove_prefix(static_cast<std::size_t>(w));
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{s.fd, POLLOUT, 0};  // someone made our stdout non-blocking: wait instead of spinning
      ::poll(&p, 1, -1);
    } else {
      s.broken = true;
      s.reader_gone = w < 0 && errno == EPIPE;
    }
  }
}

void say(const std::string& message) { write_all(sinks[1], "tutti-run: " + message + "\n"); }

using tutti::run_tool::options;

[[noreturn]] void usage_error(const std::string& why) {
  write_all(sinks[1], "tutti-run: " + why + "\n" + std::string(synopsis) +
                          "Try 'tutti-run --help' for more information.\n");
  std::exit(exit_usage);
}

std::string errno_text(int e) { return std::strerror(e); }

std::string signal_name(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#endif
  if (const char* description = ::strsignal(sig)) return description;
  return "unknown signal";
}

std::string plural(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Command line.


//! "j" + the launcher's pid + 64 random bits, in fixed-width hex: unique between concurrent
//! launches (distinct pids) and, thanks to the random part, across pid namespaces and reboots.
//! No '-', so the tutti-<id>- prefix of one default id is never a prefix of another's.
std::string fresh_job_id() {
  std::uint64_t bits = 0;
  try {
    std::random_device device;
    bits = (static_cast<std::uint64_t>(device()) << 32) ^ device();
  } catch (...) {  // no entropy source: the clock below still varies
  }
  bits ^= static_cast<std::uint64_t>(steady::now().time_since_epoch().count()) * 0x9E3779B97F4A7C15ull;
  char buf[40];
  std::snprintf(buf, sizeof buf, "j%08x%016llx", static_cast<unsigned>(::getpid()),
                static_cast<unsigned long long>(bits));
  return buf;
}

//! 32 bytes from the kernel's CSPRNG as 64 hex digits: the job key (TUTTI_JOB_KEY) that ranks prove
//! to the tcp_store. Empty when getrandom fails (then no key is set and a store says what is missing).
std::string fresh_job_key() {
  unsigned char bytes[32];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    got += static_cast<std::size_t>(n);
  }
  std::string hex;
  for (unsigned char b : bytes) {
    hex += "0123456789abcdef"[b >> 4];
    hex += "0123456789abcdef"[b & 15];
  }
  explicit_bzero(bytes, sizeof bytes);
  return hex;
}

//! A TCP port on 127.0.0.1 that nothing listens on now, for rank 0's store (TUTTI_STORE_ADDR);
//! 0 when none can be had. Another process may take it before rank 0 binds it: rank 0 then fails
//! naming the address, and the user can set TUTTI_STORE_ADDR themselves.
std::uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  std::uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// ---------------------------------------------------------------------------------------------
// Signals: a self-pipe carries each signal's number to the poll loop.

int signal_pipe[2] = {-1, -1};

constexpr int touched_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE};
struct sigaction original_action[std::size(touched_signals)];  //!< restored in the ranks

extern "C" void on_signal(int sig) {
  const int saved = errno;
  const auto byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] const auto ignored = ::write(signal_pipe[1], &byte, 1);
  errno = saved;
}

void install_signal_handlers() {
  if (::pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    say("cannot create the signal pipe: " + errno_text(errno));
    std::exit(exit_failure);
  }
  for (std::size_t i = 0; i < std::size(touched_signals); ++i) {
    const int sig = touched_signals[i];
    ::sigaction(sig, nullptr, &original_action[i]);
    struct sigaction action {};
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sig == SIGPIPE) {
      action.sa_handler = SIG_IGN;  // a closed stdout is an EPIPE we handle, not our death
    } else if (original_action[i].sa_handler == SIG_IGN && sig != SIGCHLD) {
      continue;  // started with it ignored (nohup, a non-interactive shell's '&'): keep it so
    } else {
      action.sa_handler = on_signal;
      if (sig == SIGCHLD) action.sa_flags |= SA_NOCLDSTOP;
    }
    ::sigaction(sig, &action, nullptr);
  }
}

// ---------------------------------------------------------------------------------------------
// /dev/shm: tutti's shm transport names its segments "/tutti-<job id>.<rank>" (job_name.hpp).

std::size_t remove_job_segments(const std::string& job_id) {
  const int dir_fd = ::open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return 0;
  DIR* dir = ::fdopendir(dir_fd);
  if (!dir) {
    ::close(dir_fd);
    return 0;
  }
  // "." cannot occur in a job id, so job "a" never matches the segments of job "a-b".
  const std::string prefix = tutti::job_name::segment_prefix(job_id);
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir))
    if (std::string_view(entry->d_name).starts_with(prefix)) names.emplace_back(entry->d_name);
  const uid_t me = ::geteuid();
  std::size_t removed = 0;
  for (const auto& name : names) {
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (st.st_uid != me || !S_ISREG(st.st_mode)) continue;
    if (::unlinkat(dir_fd, name.c_str(), 0) == 0) ++removed;
  }
  ::closedir(dir);
  return removed;
}

// ---------------------------------------------------------------------------------------------
// The job.

struct stream {
  int fd = -1;          //!< read end of the rank's pipe; -1 once closed
  std::string partial;  //!< bytes after the last newline seen
};

struct rank_state {
  pid_t pid = -1;          //!< also its process group id
  bool running = false;    //!< started and not yet reaped
  bool signalled = false;  //!< its process group was sent a stop signal
  stream streams[2];       //!< 0: stdout, 1: stderr
};

class job {
 public:
  //! `restart`: 0 for the first start, k for the k-th restart (TUTTI_RESTART in the ranks).
  job(options opt, int restart) : opt_(std::move(opt)), ranks_(static_cast<std::size_t>(opt_.ranks)) {
    const std::string_view ours[] = {"TUTTI_RANK=",     "TUTTI_WORLD_SIZE=", "TUTTI_LOCAL_RANK=",   "TUTTI_LOCAL_SIZE=",
                                     "TUTTI_JOB_ID=",   "TUTTI_NODE_ID=",    "TUTTI_RESTART=",      "TUTTI_MAX_RESTARTS="};
    const auto set_by_us = [&](std::string_view entry) {
      return std::any_of(std::begin(ours), std::end(ours), [&](auto p) {
        return entry.starts_with(p) && (p != "TUTTI_NODE_ID=" || opt_.ranks_per_node > 0);
      });
    };
    bool have_key = false, have_store = false, have_line_buffered = false;
    for (char** e = environ; e && *e; ++e) {
      const std::string_view entry = *e;
      have_key |= entry.starts_with("TUTTI_JOB_KEY=") || entry.starts_with("TUTTI_JOB_KEY_FILE=");
      have_store |= entry.starts_with("TUTTI_STORE_ADDR=");
      have_line_buffered |= entry.starts_with("TUTTI_LINE_BUFFERED=");
      if (!set_by_us(entry))
        environment_.push_back(*e);
    }
    // What a multi-host transport's store needs, so that it also runs under tutti-run on one
    // host: a fresh key per launch (in the ranks' environment only, never printed) and rank 0's
    // address. A user's own TUTTI_JOB_KEY(_FILE) or TUTTI_STORE_ADDR is kept.
    // A launcher (--launcher) gets none of them: it may start ranks on other hosts, where a
    // loopback store address would be wrong; it has its own way to rendezvous.
    if (!have_key && !opt_.launcher)
      if (auto key = fresh_job_key(); !key.empty()) shared_.push_back("TUTTI_JOB_KEY=" + key);
    if (!have_store && !opt_.launcher)
      if (const auto port = free_loopback_port(); port != 0)
        shared_.push_back("TUTTI_STORE_ADDR=127.0.0.1:" + std::to_string(port));
    if (!have_line_buffered && !opt_.launcher) shared_.push_back("TUTTI_LINE_BUFFERED=1");  // core/log.hpp honours it
    shared_.push_back("TUTTI_RESTART=" + std::to_string(restart));
    shared_.push_back("TUTTI_MAX_RESTARTS=" + std::to_string(opt_.max_restarts));
    for (auto& s : shared_) environment_.push_back(s.data());
  }

  int run() {
    for (int k = 0; k < opt_.ranks; ++k) {
      if (!launch(k)) {
        failed_ = true;
        break;
      }
      read_signals();  // stop launching once interrupted
      if (stopping_) break;
    }
    if (failed_ && !stopping_) begin_stop(SIGTERM);

    while (running_ > 0) loop_once();

    // Every rank is gone; a pipe may still be held open by something a rank left behind.
    for (auto& r : ranks_) {
      drain(r);
      for (int w = 0; w < 2; ++w) finish(r, w);
    }
    if (stopping_)  // what the stopped ranks started goes with them
      for (const auto& r : ranks_)
        if (r.signalled) signal_group(r, SIGKILL);

    if (const auto n = remove_job_segments(opt_.job_id); n > 0)
      say("removed " + plural(n, "leftover shared-memory segment") + " of job " + opt_.job_id);

    if (interrupted_by_) return 128 + interrupted_by_;
    return failed_ ? exit_failure : 0;
  }

  //! Whether a signal to tutti-run ended the job (then it is not restarted).
  [[nodiscard]] bool interrupted() const noexcept { return interrupted_by_ != 0; }
  //! The first failure, in the words tutti-run said it ("rank 1 was killed by signal 9 (SIGKILL)").
  [[nodiscard]] const std::string& failure() const noexcept { return failure_; }

 private:
  // --- starting ranks ---

  bool launch(int k) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
      say("cannot start rank " + std::to_string(k) + ": pipe: " + errno_text(errno));
      return false;
    }
    if (::pipe2(err, O_CLOEXEC) != 0) {
      say("cannot start rank " + std::to_string(k) + ": pipe: " + errno_text(errno));
      ::close(out[0]);
      ::close(out[1]);
      return false;
    }
    // Everything the child needs is built before fork.
    const std::string n = std::to_string(opt_.ranks), r = std::to_string(k);
    std::vector<std::string> ours;  // a launcher (--launcher) gets none: it starts ranks of its own
    if (!opt_.launcher) {
      ours = {"TUTTI_RANK=" + r, "TUTTI_WORLD_SIZE=" + n, "TUTTI_JOB_ID=" + opt_.job_id};
      if (const int per = opt_.ranks_per_node; per > 0) {
        const int node = k / per, first = node * per;
        ours.push_back("TUTTI_NODE_ID=sim" + std::to_string(node));
        ours.push_back("TUTTI_LOCAL_RANK=" + std::to_string(k - first));
        ours.push_back("TUTTI_LOCAL_SIZE=" + std::to_string(std::min(per, opt_.ranks - first)));
      } else {
        ours.push_back("TUTTI_LOCAL_RANK=" + r);
        ours.push_back("TUTTI_LOCAL_SIZE=" + n);
      }
    }
    std::vector<char*> envp(environment_);
    for (auto& s : ours) envp.push_back(s.data());
    envp.push_back(nullptr);
    const pid_t parent = ::getpid();
    cpu_set_t cpu;  // --bind core: this rank's one CPU, chosen before fork
    CPU_ZERO(&cpu);
    if (opt_.bind_cores) CPU_SET(bound_cpu(k), &cpu);

    // Blocked across fork so that no handler of ours runs in the child before it restores the
    // original dispositions (it would write into our signal pipe).
    sigset_t all, previous;
    sigfillset(&all);
    ::sigprocmask(SIG_BLOCK, &all, &previous);
    const pid_t pid = ::fork();
    if (pid == 0) exec_rank(k, out[1], err[1], envp.data(), previous, parent, opt_.bind_cores ? &cpu : nullptr);
    const int fork_errno = errno;
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);

    ::close(out[1]);
    ::close(err[1]);
    if (pid < 0) {
      ::close(out[0]);
      ::close(err[0]);
      say("cannot start rank " + std::to_string(k) + ": fork: " + errno_text(fork_errno));
      return false;
    }
    ::setpgid(pid, pid);  // also done by the child; whoever is first wins, the other may fail
    auto& rank = ranks_[static_cast<std::size_t>(k)];
    rank.pid = pid;
    rank.running = true;
    rank.streams[0].fd = out[0];
    rank.streams[1].fd = err[0];
    for (int fd : {out[0], err[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    by_pid_[pid] = k;
    ++running_;
    return true;
  }

  //! The (k mod C)-th of the C CPUs tutti-run may run on (its own affinity, e.g. under taskset,
  //! read once).
  [[nodiscard]] static int bound_cpu(int k) {
    static const std::vector<int> allowed = [] {
      std::vector<int> cpus;
      cpu_set_t set;
      CPU_ZERO(&set);
      if (::sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
          if (CPU_ISSET(c, &set)) cpus.push_back(c);
      if (cpus.empty()) cpus.push_back(0);
      return cpus;
    }();
    return allowed[static_cast<std::size_t>(k) % allowed.size()];
  }

  [[noreturn]] void exec_rank(int k, int out_fd, int err_fd, char** envp, const sigset_t& mask,
                              pid_t parent, const cpu_set_t* cpu) {
    ::setpgid(0, 0);
    if (cpu && ::sched_setaffinity(0, sizeof *cpu, cpu) != 0) {
      const int e = errno;
      char message[256];
      const int len = std::snprintf(message, sizeof message, "tutti-run: rank %d: --bind core: sched_setaffinity: %s\n",
                                    k, std::strerror(e));
      if (len > 0) (void)!::write(STDERR_FILENO, message, static_cast<std::size_t>(len));
      ::_exit(exit_failure);
    }
    for (std::size_t i = 0; i < std::size(touched_signals); ++i)
      ::sigaction(touched_signals[i], &original_action[i], nullptr);
    ::sigprocmask(SIG_SETMASK, &mask, nullptr);
    // If tutti-run dies without a chance to stop us (SIGKILL, OOM killer), so do we.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(exit_failure);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    if (k != 0 || ::isatty(STDIN_FILENO)) {
      // Ranks lead their own process groups: reading the terminal would stop them (SIGTTIN).
      const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    }
    ::execvpe(opt_.command[0], opt_.command, envp);
    const int e = errno;
    char message[512];
    const int len = std::snprintf(message, sizeof message, "tutti-run: cannot execute '%s': %s\n",
                                  opt_.command[0], std::strerror(e));
    if (len > 0) {
      const auto size = std::min(static_cast<std::size_t>(len), sizeof message - 1);
      [[maybe_unused]] const auto ignored = ::write(STDERR_FILENO, message, size);
    }
    ::_exit(e == ENOENT ? 127 : 126);  // the shell's convention: not found / found, not runnable
  }

  // --- the loop ---

  void loop_once() {
    std::vector<pollfd> fds;
    std::vector<std::pair<rank_state*, int>> owners;
    fds.push_back({signal_pipe[0], POLLIN, 0});
    owners.emplace_back(nullptr, 0);
    for (auto& r : ranks_)
      for (int w = 0; w < 2; ++w)
        if (r.streams[w].fd >= 0) {
          fds.push_back({r.streams[w].fd, POLLIN, 0});
          owners.emplace_back(&r, w);
        }

    int timeout_ms = 1000;  // SIGCHLD wakes us; this is only a safety net
    const auto until = [&](steady::time_point t) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(t - steady::now()).count();
      timeout_ms = static_cast<int>(std::clamp<long long>(left, 0, timeout_ms));
    };
    if (stopping_ && !killed_) until(deadline_);
    if (lingering_ && !stopping_) until(linger_until_);
    const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) {
      say("poll: " + errno_text(errno));
      ::usleep(10000);
    }

    read_signals();
    reap();
    if (ready > 0)
      for (std::size_t i = 1; i < fds.size(); ++i) {
        auto [r, w] = owners[i];
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) && r->streams[w].fd == fds[i].fd)
          read_once(*r, w);
      }
    if (lingering_ && !stopping_ && running_ > 0 && steady::now() >= linger_until_) {
      say("stopping " + plural(std::size_t(running_), "rank") + " still running " +
          seconds_text(opt_.linger_seconds) + " after the first failure (SIGTERM)");
      begin_stop(SIGTERM);
    }
    if (stopping_ && !killed_ && steady::now() >= deadline_) {
      const auto still = static_cast<std::size_t>(running_);
      if (still > 0)
        say(plural(still, "rank") + " still running " + seconds_text(opt_.grace_seconds) + " after " +
            signal_name(stop_signal_) + "; sending SIGKILL");
      kill_all();
    }
  }

  void read_signals() {
    unsigned char buf[64];
    ssize_t n;
    while ((n = ::read(signal_pipe[0], buf, sizeof buf)) > 0)
      for (ssize_t i = 0; i < n; ++i)
        if (buf[i] != SIGCHLD) on_stop_signal(buf[i]);
  }

  void on_stop_signal(int sig) {
    if (!interrupted_by_) interrupted_by_ = sig;
    if (!stopping_) {
      say("received " + signal_name(sig) + "; forwarding it to " + plural(std::size_t(running_), "rank"));
      begin_stop(sig);
    } else if (!killed_) {
      say("received " + signal_name(sig) + " while stopping; sending SIGKILL to every rank");
      kill_all();
    }
  }

  void reap() {
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid < 0 && errno == EINTR) continue;
      if (pid <= 0) break;
      const auto it = by_pid_.find(pid);
      if (it == by_pid_.end()) continue;
      const int k = it->second;
      auto& r = ranks_[static_cast<std::size_t>(k)];
      r.running = false;
      --running_;
      drain(r);  // its last words come before our verdict
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
      if (!stopping_) {
        std::string what;
        const std::string who = opt_.launcher ? "the launcher " + std::string(opt_.command[0]) : "rank " + std::to_string(k);
        if (WIFEXITED(status)) {
          what = who + " exited with status " + std::to_string(WEXITSTATUS(status));
        } else if (WIFSIGNALED(status)) {
          const int sig = WTERMSIG(status);
          what = who + " was killed by signal " + std::to_string(sig) + " (" +
                 signal_name(sig) + (WCOREDUMP(status) ? ", core dumped" : "") + ")";
        }
        say(what);
        if (failure_.empty()) failure_ = what;
      }
      failed_ = true;
    }
    if (failed_ && !stopping_ && !lingering_) {
      // The survivors get a moment to notice the loss and say so (peer_lost) before we stop them.
      lingering_ = true;
      linger_until_ = steady::now() + std::chrono::duration_cast<steady::duration>(
                                          std::chrono::duration<double>(opt_.linger_seconds));
    }
  }

  void begin_stop(int sig) {
    stopping_ = true;
    stop_signal_ = sig;
    deadline_ = steady::now() + std::chrono::duration_cast<steady::duration>(
                                    std::chrono::duration<double>(opt_.grace_seconds));
    for (auto& r : ranks_)
      if (r.running) {
        signal_group(r, sig);
        r.signalled = true;
      }
  }

  void kill_all() {
    killed_ = true;
    for (auto& r : ranks_)
      if (r.running || r.signalled) signal_group(r, SIGKILL);
  }

  static void signal_group(const rank_state& r, int sig) {
    if (r.pid <= 0) return;  // never started: kill(-(-1)) would be kill(1)
    if (::kill(-r.pid, sig) != 0 && errno == ESRCH && r.running) ::kill(r.pid, sig);
  }

  // --- output ---

  std::string prefix(const rank_state& r) const {
    if (!opt_.prefix) return {};
    return "[rank " + std::to_string(&r - ranks_.data()) + "] ";
  }

  //! Reads what one turn of the loop may: one chunk, so that a chatty rank cannot starve the rest.
  //! Returns false when the stream is finished (EOF or error) or would block.
  bool read_once(rank_state& r, int w) {
    char buf[read_chunk];
    const ssize_t n = ::read(r.streams[w].fd, buf, sizeof buf);
    if (n > 0) {
      consume(r, w, std::string_view(buf, static_cast<std::size_t>(n)));
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
    finish(r, w);
    return false;
  }

  //! Reads what is already in the rank's pipes, up to a limit (a grandchild may keep writing).
  void drain(rank_state& r) {
    for (int w = 0; w < 2; ++w) {
      std::size_t total = 0;
      while (r.streams[w].fd >= 0 && total < drain_limit && read_once(r, w)) total += read_chunk;
    }
  }

  void consume(rank_state& r, int w, std::string_view data) {
    auto& s = r.streams[w];
    const std::string p = prefix(r);
    std::string out;
    while (!data.empty()) {
      const auto nl = data.find('\n');
      if (nl == std::string_view::npos) break;
      out += p;
      out += s.partial;
      out += data.substr(0, nl + 1);
      s.partial.clear();
      data.remove_prefix(nl + 1);
    }
    s.partial += data;
    if (s.partial.size() >= max_partial_line) {  // memory stays bounded; the line is split
      out += p;
      out += s.partial;
      if (opt_.prefix) out += '\n';
      s.partial.clear();
    }
    emit(w, out);
  }

  //! Closes a stream, writing its last line even without a newline.
  void finish(rank_state& r, int w) {
    auto& s = r.streams[w];
    if (s.fd < 0) return;
    if (!s.partial.empty()) {
      std::string out = prefix(r) + s.partial;
      if (opt_.prefix) out += '\n';  // --no-prefix passes the bytes through exactly
      s.partial.clear();
      emit(w, out);
    }
    ::close(s.fd);
    s.fd = -1;
  }

  void emit(int w, std::string_view out) {
    if (out.empty()) return;
    auto& s = sinks[w];
    if (s.broken) return;
    write_all(s, out);
    if (s.reader_gone) {
      // Like any program in a pipeline whose reader left: close the ranks' pipes of this stream,
      // so their next write fails (SIGPIPE) as it would have without us in between.
      for (auto& r : ranks_)
        if (r.streams[w].fd >= 0) {
          ::close(r.streams[w].fd);
          r.streams[w].fd = -1;
          r.streams[w].partial.clear();
        }
    }
  }

  options opt_;
  std::vector<rank_state> ranks_;
  std::vector<std::string> shared_;  //!< TUTTI_JOB_KEY, TUTTI_STORE_ADDR when we chose them
  std::vector<char*> environment_;  //!< ours, minus the TUTTI_* variables we set per rank
  std::unordered_map<pid_t, int> by_pid_;
  int running_ = 0;
  bool failed_ = false;
  std::string failure_;               //!< the first rank failure, as said
  bool lingering_ = false;            //!< a rank failed; the others get opt_.linger_seconds
  steady::time_point linger_until_{};
  bool stopping_ = false;
  bool killed_ = false;
  int stop_signal_ = 0;
  int interrupted_by_ = 0;  //!< first SIGINT/SIGTERM/SIGHUP received
  steady::time_point deadline_{};
};

//! A closed stdin/stdout/stderr would be handed out again by pipe2() and then lost in dup2().
void ensure_standard_fds_open() {
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      const int null_fd = ::open("/dev/null", O_RDWR);
      if (null_fd >= 0 && null_fd != fd) {
        ::dup2(null_fd, fd);
        ::close(null_fd);
      }
    }
}

}  // namespace

int main(int argc, char** argv) {
  ensure_standard_fds_open();
  options opt;
  try {
    opt = tutti::run_tool::parse_command_line(argc, argv);
  } catch (const tutti::run_tool::usage_failure& e) {
    usage_error(e.what());
  }
  if (opt.help) {
    write_all(sinks[0], std::string(synopsis) + "\n" + std::string(help_text));
    return 0;
  }
  if (!opt.job_id_given) opt.job_id = fresh_job_id();
  install_signal_handlers();
  for (int restart = 0;; ++restart) {
    job j(opt, restart);
    const int status = j.run();
    if (status == 0 || j.interrupted()) return status;
    const std::string why = j.failure().empty() ? "a rank could not be started" : j.failure();
    if (restart == opt.max_restarts) {
      if (opt.max_restarts > 0)
        say("giving up: the job failed again after " + plural(static_cast<std::size_t>(restart), "restart") +
            " (--max-restarts " + std::to_string(opt.max_restarts) + "); the last failure: " + why);
      return status;
    }
    say("restart " + std::to_string(restart + 1) + " of " + std::to_string(opt.max_restarts) + ", after: " + why);
  }
}
