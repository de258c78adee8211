//! The fault campaign's rank (tests/netns/faults.sh): one rank of a multi_node job that works in one
//! phase until rank 0 says stop, while the driver injects a fault from outside (SIGKILL, SIGSTOP, a
//! link taken down or slowed) or, with TUTTI_FAULT_LEAVE, this rank leaves early by itself.
//!   TUTTI_FAULT_PHASE     allreduce: blocking 1 MiB allreduces, each result checked;
//!                         fusion: 12 gradients of mixed sizes through allreduce_async, checked;
//!                         train: data_parallel_trainer steps of a least-squares model;
//!                         mixed: the three in turn (the soak, soak.sh).
//!   TUTTI_FAULT_SECONDS   how long rank 0 keeps the job going (default 8)
//!   TUTTI_FAULT_PACE_MS   every rank sleeps this long after each unit of work (default 0): a soak
//!                         that runs beside other tests (CI's) takes a fraction of the cores
//!                         instead of all of them, and still meets every kill and restart
//!   TUTTI_FAULT_LEAVE     "R S": rank R returns from its work S seconds after `ready`, without a
//!                         word (a program whose loop ended early), destroying its communicator
//! Prints `fault-worker rank R: ready job=<id> pid=<pid>` once every rank has met, then, once its
//! communicator is destroyed (threads joined, transport closed), one line
//! `fault-worker rank R: <outcome> peer=<P> after=<S> failed=<F> iterations=<I>: <what>` (S: seconds
//! since ready, once destroyed; F: when the error came, 0 for none) where outcome is ok, left, peer_lost, timeout, transport_error, mismatch or error, and
//! `fault-worker rank R: gone after=<S>` (since start); exits 0 (ok, left) or 3.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <tutti/algorithm/automatic.hpp>
#include <tutti/communicator.hpp>
#include <tutti/trainer/data_parallel_trainer.hpp>
#include <tutti/trainer/optimizer.hpp>
#include <tutti/transport/multi_node.hpp>

#include "support/least_squares.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using comm_t = tutti::communicator<tutti::transport::multi_node, tutti::algorithm::automatic>;

double since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

[[noreturn]] void wrong(const std::string& what) { throw tutti::error("fault worker: wrong result: " + what); }

//! Rank 0's word, agreed by every rank through one allreduce: go on (1) or stop (0).
bool go_on(comm_t& comm, clock_type::time_point start, double seconds) {
  std::vector<std::int32_t> flag{comm.rank() == 0 && since(start) < seconds ? 1 : 0};
  comm.allreduce(flag, tutti::op::sum);
  return flag[0] == 1;
}

//! y = W x + b on synthetic data (support/least_squares.hpp), its gradients handed over as backward makes them.
using tiny_model = tutti_test::least_squares_model<16, 8>;
using tiny_data = tutti_test::least_squares_data<tiny_model>;

//! One unit of the phase's work; throws what the communicator throws.
struct work {
  comm_t& comm;
  std::string phase;
  std::vector<float> big = std::vector<float>(1 << 18);
  std::vector<std::vector<float>> grads;
  tiny_data data{4096};

  std::size_t turn = 0;

  void once() {
    const float world = static_cast<float>(comm.size()), want = world * (world + 1) / 2;
    static constexpr const char* in_turn[] = {"allreduce", "fusion", "train"};
    const std::string now = phase == "mixed" ? in_turn[turn++ % 3] : phase;
    if (now == "allreduce") {
      std::fill(big.begin(), big.end(), static_cast<float>(comm.rank() + 1));
      comm.allreduce(big, tutti::op::sum);
      if (big.front() != want || big.back() != want) wrong("allreduce gave " + std::to_string(big.front()));
    } else if (now == "fusion") {
      if (grads.empty())
        for (std::size_t k = 0; k < 12; ++k) grads.emplace_back((k * 7919) % 40000 + 1);
      std::vector<tutti::fusion::handle> hs;
      for (std::size_t k = 0; k < grads.size(); ++k) {
        std::fill(grads[k].begin(), grads[k].end(), static_cast<float>(comm.rank() + 1));
        hs.push_back(comm.allreduce_async("g" + std::to_string(k), grads[k], tutti::op::sum));
      }
      tutti::fusion::wait_all(hs);  // every handle done before the first failure is rethrown
      for (auto& g : grads)
        if (g.front() != want || g.back() != want) wrong("allreduce_async gave " + std::to_string(g.front()));
    } else {
      tiny_model model(7);
      tutti::trainer::sgd opt;
      tutti::trainer::trainer_options o;
      o.global_batch_size = 64;
      o.max_batches = 20;
      o.announce = [](const std::string&) {};
      tutti::trainer::data_parallel_trainer<comm_t, tiny_model, tutti::trainer::sgd> trainer(comm, model, opt, o);
      trainer.fit(data, data);
    }
  }
};

}  // namespace

int main() {
  const auto started = clock_type::now();
  const auto phase = tutti::config::raw("TUTTI_FAULT_PHASE").value_or("allreduce");
  const double seconds = std::stod(tutti::config::raw("TUTTI_FAULT_SECONDS").value_or("8"));
  const auto pace = std::chrono::milliseconds(std::stoi(tutti::config::raw("TUTTI_FAULT_PACE_MS").value_or("0")));
  std::optional<std::pair<int, double>> leave;
  if (const auto spec = tutti::config::raw("TUTTI_FAULT_LEAVE"))
    leave = std::pair{std::stoi(*spec), std::stod(spec->substr(spec->find(' ') + 1))};
  int rank = -1;
  std::string outcome = "ok", what;
  int peer = -1;
  long iterations = 0;
  clock_type::time_point ready{}, failed{};
  {
    try {
      auto comm = comm_t::from_env();
      rank = comm.rank();
      work w{comm, phase};
      w.once();  // every rank connected and working
      std::printf("fault-worker rank %d: ready job=%s pid=%d\n", rank, tutti::rank_info_from_env().job_id.c_str(),
                  static_cast<int>(::getpid()));
      std::fflush(stdout);
      ready = clock_type::now();
      try {
        while (go_on(comm, ready, seconds)) {
          if (leave && leave->first == rank && since(ready) >= leave->second) {
            outcome = "left";
            break;
          }
          w.once();
          ++iterations;
          if (pace.count() > 0) std::this_thread::sleep_for(pace);
        }
      } catch (...) {
        failed = clock_type::now();  // before the communicator's destructor runs
        throw;
      }
    } catch (const tutti::peer_lost& e) {
      outcome = "peer_lost", peer = e.peer(), what = e.what();
    } catch (const tutti::timeout& e) {
      outcome = "timeout", what = e.what();
    } catch (const tutti::transport_error& e) {
      outcome = "transport_error", what = e.what();
    } catch (const tutti::mismatch& e) {
      outcome = "mismatch", what = e.what();
    } catch (const std::exception& e) {
      outcome = "error", what = e.what();
    }
    const auto at = [&](clock_type::time_point t) {
      return ready == clock_type::time_point{} || t == clock_type::time_point{} ? 0.0 : std::chrono::duration<double>(t - ready).count();
    };
    std::printf("fault-worker rank %d: %s peer=%d after=%.2f failed=%.2f iterations=%ld: %s\n", rank, outcome.c_str(),
                peer, at(clock_type::now()), at(failed), iterations, what.c_str());
    std::fflush(stdout);
  }
  std::printf("fault-worker rank %d: gone after=%.2f\n", rank, since(started));
  std::fflush(stdout);
  return outcome == "ok" || outcome == "left" ? 0 : 3;
}
