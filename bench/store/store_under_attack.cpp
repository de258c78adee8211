//! @file store_under_attack.cpp  store-under-attack: the tcp_store's good-client latency with 0 and
//! with N bad clients (slow loris, oversized, garbage, idle: tests/bootstrap/store_attack.hpp).
//!
//! Each run starts a server (rank 0's, on 127.0.0.1, the production handshake timeout of 5 s unless
//! --handshake-timeout), two good clients doing set then get of their own keys (1 ms apart, like
//! ranks at rendezvous), and for the attacked runs N bad connections, each replaced as soon as the
//! server closes it, so N are there the whole window. Only ops overlapping the window count. Runs
//! alternate quiet and attacked; the summary is the median over runs of each figure.
//!   store-under-attack [--runs 5] [--seconds 3] [--bad 100] [--handshake-timeout 5]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store_attack.hpp"
#include "tutti/bootstrap/tcp_store.hpp"
#include "tutti/core/log.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using tutti::bootstrap::tcp_store;
using tutti::bootstrap::tcp_store_options;

constexpr const char* key = "store-under-attack-key-0123456789";

struct figures {
  double ops_per_s = 0, p50_ms = 0, p99_ms = 0, max_ms = 0;
  int bad_connections = 0, bad_closed = 0;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

figures run_once(int bad, double seconds, double handshake_timeout) {
  tcp_store_options so;
  so.is_server = true;
  so.bind_address = "127.0.0.1";
  so.key = tutti::bootstrap::job_key(key);
  so.timeout = 10s;
  so.handshake_timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(handshake_timeout));
  so.rank = 0;
  tcp_store server(so);
  struct op {
    clock_type::time_point start, end;
  };
  std::vector<op> ops[2];
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> good;
  for (int g = 0; g < 2; ++g)
    good.emplace_back([&, g] {
      try {
        tcp_store_options co;
        co.host = "127.0.0.1";
        co.port = server.port();
        co.key = tutti::bootstrap::job_key(key);
        co.timeout = 10s;
        co.rank = 1 + g;
        tcp_store client(co);
        for (int i = 0; !stop && i < 10'000'000; ++i) {
          const std::string k = "good/" + std::to_string(g) + "/" + std::to_string(i % 16);
          auto t0 = clock_type::now();
          client.set(k, tutti::bootstrap::store_bytes(8, static_cast<unsigned char>(i)));
          ops[g].push_back({t0, clock_type::now()});
          t0 = clock_type::now();
          (void)client.get(k, tutti::deadline::after(10s));
          ops[g].push_back({t0, clock_type::now()});
          std::this_thread::sleep_for(1ms);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "store-under-attack: a good client failed: %s\n", e.what());
        ++failures;
      }
    });
  std::this_thread::sleep_for(200ms);
  const auto window = std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  const auto from = clock_type::now(), to = from + window;
  figures f;
  if (bad > 0) {
    tutti_test::store_attack attack(server.port(), bad, std::chrono::duration_cast<std::chrono::milliseconds>(window),
                                    /*reconnect=*/true);
    std::this_thread::sleep_until(to);
    attack.stop();
    const auto report = attack.finish();
    f.bad_connections = report.connected;
    f.bad_closed = report.closed_by_server;
  } else {
    std::this_thread::sleep_until(to);
  }
  stop = true;
  for (auto& t : good) t.join();
  std::vector<double> ms;
  std::size_t completed = 0;
  for (const auto& list : ops)
    for (const auto& o : list) {
      if (o.start < to && o.end > from) ms.push_back(std::chrono::duration<double, std::milli>(o.end - o.start).count());
      completed += o.end >= from && o.end <= to;
    }
  f.ops_per_s = static_cast<double>(completed) / seconds;
  f.p50_ms = percentile(ms, 0.5);
  f.p99_ms = percentile(ms, 0.99);
  f.max_ms = percentile(ms, 1.0);
  if (failures) std::exit(1);
  return f;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5, bad = 100;
  double seconds = 3, handshake_timeout = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--runs") runs = std::atoi(argv[i + 1]);
    else if (a == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (a == "--bad") bad = std::atoi(argv[i + 1]);
    else if (a == "--handshake-timeout") handshake_timeout = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--runs 5] [--seconds 3] [--bad 100] [--handshake-timeout 5]\n", argv[0]);
      return 2;
    }
  }
  if (runs < 1 || bad < 0 || seconds <= 0 || handshake_timeout <= 0) {
    std::fprintf(stderr, "store-under-attack: --runs >= 1, --bad >= 0, --seconds > 0, --handshake-timeout > 0\n");
    return 2;
  }
  // The server's 100s of warnings (one per bad connection) are the log's business, not this table's.
  std::fflush(stderr);
  std::FILE* quiet = std::freopen("/dev/null", "w", stderr);
  (void)quiet;
  std::printf("store-under-attack: %d runs of %.1f s each, 2 good clients (set+get, 1 ms apart), %d bad clients "
              "(slow loris 1 B/100 ms, oversized header, garbage, idle; replaced when closed), handshake timeout "
              "%.1f s\n",
              runs, seconds, bad, handshake_timeout);
  std::printf("%-4s %-6s %10s %10s %10s %10s %12s\n", "run", "bad", "ops/s", "p50 ms", "p99 ms", "max ms",
              "bad conns");
  std::vector<figures> quiet_runs, attacked_runs;
  for (int r = 0; r < runs; ++r)
    for (const int b : {0, bad}) {
      const auto f = run_once(b, seconds, handshake_timeout);
      (b == 0 ? quiet_runs : attacked_runs).push_back(f);
      std::printf("%-4d %-6d %10.0f %10.3f %10.3f %10.3f %12d\n", r, b, f.ops_per_s, f.p50_ms, f.p99_ms, f.max_ms,
                  f.bad_connections);
      std::fflush(stdout);
    }
  std::printf("\nmedian of %d runs:\n%-6s %10s %10s %10s %10s\n", runs, "bad", "ops/s", "p50 ms", "p99 ms", "max ms");
  for (const auto* set : {&quiet_runs, &attacked_runs}) {
    auto pick = [&](double figures::*m) {
      std::vector<double> v;
      for (const auto& f : *set) v.push_back(f.*m);
      return median(v);
    };
    std::printf("%-6d %10.0f %10.3f %10.3f %10.3f\n", set == &quiet_runs ? 0 : bad, pick(&figures::ops_per_s),
                pick(&figures::p50_ms), pick(&figures::p99_ms), pick(&figures::max_ms));
  }
  return 0;
}
