//! @file tcp_store_test.cpp  bootstrap::tcp_store over real TCP: frames, job key, every operation, bad clients, shutdown.
#include <doctest/doctest.h>

#if TUTTI_HAVE_NET
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/store_test_options.hpp"
#include "tutti/bootstrap/job_key.hpp"
#include "tutti/bootstrap/tcp_store.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"

namespace {

using namespace std::chrono_literals;
using tutti::deadline;
using tutti::bootstrap::job_key;
using tutti::bootstrap::store_bytes;
using tutti::bootstrap::tcp_store;
using tutti::bootstrap::tcp_store_options;
namespace wire = tutti::bootstrap::tcp_wire;
using clock_type = std::chrono::steady_clock;
using namespace tutti_test;

double seconds_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

//! Sets (or unsets, with nullptr) an environment variable for one scope.
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~scoped_env() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

//! Sends what the process writes to stderr (the log) into a file while it lives; text() reads it.
class stderr_capture {
 public:
  stderr_capture() {
    std::fflush(stderr);
    saved_ = ::dup(2);
    char name[] = "/tmp/tutti-store-log-XXXXXX";
    fd_ = ::mkstemp(name);
    path_ = name;
    ::dup2(fd_, 2);
  }
  ~stderr_capture() {
    restore();
    ::unlink(path_.c_str());
  }
  std::string text() {
    restore();
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    ::close(fd_);
    saved_ = -1;
  }
  int saved_ = -1, fd_ = -1;
  std::string path_;
};

//! A plain TCP socket to the server, for misbehaving on purpose.
class raw_client {
 public:
  explicit raw_client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    timeval tv{5, 0};  // every read below is bounded
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~raw_client() { ::close(fd_); }
  void send(const std::vector<unsigned char>& b) { (void)::send(fd_, b.data(), b.size(), MSG_NOSIGNAL); }
  //! The next frame, or nullopt when the server closed the connection (or 5 s passed).
  std::optional<std::pair<wire::frame_type, std::vector<unsigned char>>> frame() {
    for (;;) {
      const auto r = wire::parse_frame(in_, 1u << 20);
      if (r.what == wire::parse_result::status::frame) {
        std::pair<wire::frame_type, std::vector<unsigned char>> out{r.type, {r.payload.begin(), r.payload.end()}};
        in_.erase(in_.begin(), in_.begin() + static_cast<long>(r.consumed));
        return out;
      }
      unsigned char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return std::nullopt;
      in_.insert(in_.end(), buf, buf + n);
    }
  }
  //! True when the server closes the connection within 5 s (EOF or reset), reading anything it sends.
  bool closed_by_server() {
    unsigned char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
      if (n < 0) return false;  // timed out: still open
    }
  }
  //! Authenticates with `key`, as a real client would.
  bool handshake(const job_key& key) {
    auto challenge = frame();
    if (!challenge) return false;
    const auto ns = wire::decode_challenge(challenge->second);
    wire::response_message m;
    m.client_nonce = tutti::bootstrap::tcp_auth::fresh_nonce();
    m.client_mac = tutti::bootstrap::tcp_auth::client_mac(key, *ns, m.client_nonce);
    send(wire::encode_response(m));
    auto proof = frame();
    return proof && proof->first == wire::frame_type::proof;
  }

 private:
  int fd_ = -1;
  std::vector<unsigned char> in_;
};

std::vector<unsigned char> header(std::uint8_t type, std::uint32_t length) {
  return {'t', 't', 's', 1, type, 0, 0, 0, static_cast<unsigned char>(length >> 24),
          static_cast<unsigned char>(length >> 16), static_cast<unsigned char>(length >> 8),
          static_cast<unsigned char>(length)};
}

bool ipv6_loopback_available() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

// --- frames ---------------------------------------------------------------------------------

TEST_CASE("tcp_store frames: parse_frame waits for whole frames and refuses garbage at once") {
  const auto set = wire::encode_request({wire::frame_type::set, {"k"}, to_bytes("value"), 0, 0});
  REQUIRE(set.size() == wire::header_bytes + 4 + 1 + 4 + 5);
  for (std::size_t n = 0; n < set.size(); ++n)
    CHECK(wire::parse_frame({set.data(), n}, 1024).what == wire::parse_result::status::need_more);
  auto two = set;
  two.insert(two.end(), set.begin(), set.end());
  const auto r = wire::parse_frame(two, 1024);
  REQUIRE(r.what == wire::parse_result::status::frame);
  CHECK(r.type == wire::frame_type::set);
  CHECK(r.consumed == set.size());  // the second frame is left for the next call
  CHECK(r.payload.size() == set.size() - wire::header_bytes);

  using st = wire::parse_result::status;
  const std::vector<unsigned char> http = {'G'};
  CHECK(wire::parse_frame(http, 1024).what == st::malformed);  // refused after one byte
  CHECK(wire::parse_frame(std::vector<unsigned char>{'t', 't', 's', 2}, 1024).what == st::malformed);
  CHECK(wire::parse_frame(std::vector<unsigned char>{'t', 't', 's', 1, 99}, 1024).what == st::malformed);
  CHECK(wire::parse_frame(std::vector<unsigned char>{'t', 't', 's', 1, 16, 0, 1}, 1024).what == st::malformed);
  const auto big = wire::parse_frame(header(16, 1025), 1024);
  CHECK(big.what == st::malformed);
  CHECK(big.declared == 1025);
  CHECK(wire::parse_frame(header(16, 1024), 1024).what == st::need_more);  // at the limit: fine
}

TEST_CASE("tcp_store frames: every request survives encode then decode, bad payloads are refused") {
  std::vector<wire::request> requests = {
      {wire::frame_type::set, {"rank0/address"}, {0, 255, 7}, 0, 0},
      {wire::frame_type::get, {"k"}, {}, 0, 12345},
      {wire::frame_type::wait, {"a", "", "ccc"}, {}, 0, 7},
      {wire::frame_type::check, {"k"}, {}, 0, 0},
      {wire::frame_type::add, {"n"}, {}, -42, 0},
      {wire::frame_type::close, {}, {}, 0, 0},
  };
  for (const auto& q : requests) {
    const auto bytes = wire::encode_request(q);
    const auto f = wire::parse_frame(bytes, 1 << 20);
    REQUIRE(f.what == wire::parse_result::status::frame);
    auto d = wire::decode_request(f.type, f.payload);
    REQUIRE(std::holds_alternative<wire::request>(d));
    const auto& back = std::get<wire::request>(d);
    CHECK(back.keys == q.keys);
    CHECK(back.value == q.value);
    CHECK(back.delta == q.delta);
    CHECK(back.wait_ms == q.wait_ms);
    CHECK(wire::encode_request(back) == bytes);
  }
  // A key length running past the payload, trailing bytes, a wait claiming 2^32-1 keys, a reply type.
  const std::vector<unsigned char> past = {0, 0, 0, 9, 'a'};
  CHECK(std::holds_alternative<const char*>(wire::decode_request(wire::frame_type::check, past)));
  const std::vector<unsigned char> trailing = {0, 0, 0, 1, 'a', 'x'};
  CHECK(std::holds_alternative<const char*>(wire::decode_request(wire::frame_type::check, trailing)));
  const std::vector<unsigned char> many = {0, 0, 0, 0, 0, 0, 0, 1, 255, 255, 255, 255};
  CHECK(std::holds_alternative<const char*>(wire::decode_request(wire::frame_type::wait, many)));
  CHECK(std::holds_alternative<const char*>(wire::decode_request(wire::frame_type::ok, {})));
  CHECK_FALSE(wire::decode_response(std::vector<unsigned char>(63)).has_value());
  CHECK(wire::decode_response(std::vector<unsigned char>(64)).has_value());
  CHECK_FALSE(wire::decode_reply(wire::frame_type::flag, std::vector<unsigned char>{2}).has_value());
}

// --- job key and address --------------------------------------------------------------------

TEST_CASE("job_key: from TUTTI_JOB_KEY or a private key file; never printed; errors never contain it") {
  const std::string secret = "s3cr3t-value-that-must-not-leak";
  std::vector<std::string> messages;
  {
    scoped_env k("TUTTI_JOB_KEY", secret.c_str());
    scoped_env f("TUTTI_JOB_KEY_FILE", nullptr);
    auto key = tutti::bootstrap::job_key_from_env();
    REQUIRE(key.has_value());
    CHECK(key->size() == secret.size());
    CHECK(key->describe() == "<redacted, " + std::to_string(secret.size()) + " bytes>");
    CHECK(std::string(reinterpret_cast<const char*>(key->bytes().data()), key->size()) == secret);
    job_key moved(std::move(*key));
    CHECK(key->empty());
    CHECK(moved.size() == secret.size());
  }
  {
    scoped_env k("TUTTI_JOB_KEY", "short-secret");  // 12 bytes: refused, without showing it
    const auto m = message_of<tutti::invalid_argument>([] { (void)tutti::bootstrap::job_key_from_env(); });
    CHECK(m.find("TUTTI_JOB_KEY is 12 bytes long") != std::string::npos);
    CHECK(m.find("short-secret") == std::string::npos);
    messages.push_back(m);
  }
  char dir[] = "/tmp/tutti-key-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/key";
  std::ofstream(path) << secret << "\n";
  {
    scoped_env k("TUTTI_JOB_KEY", nullptr);
    scoped_env f("TUTTI_JOB_KEY_FILE", path.c_str());
    ::chmod(path.c_str(), 0644);
    const auto m = message_of<tutti::invalid_argument>([] { (void)tutti::bootstrap::job_key_from_env(); });
    CHECK(m.find("mode 0644") != std::string::npos);
    CHECK(m.find("chmod 600") != std::string::npos);
    messages.push_back(m);
    ::chmod(path.c_str(), 0600);
    auto key = tutti::bootstrap::job_key_from_env();
    REQUIRE(key.has_value());
    CHECK(key->size() == secret.size());  // the newline is not part of it
    scoped_env both("TUTTI_JOB_KEY", secret.c_str());
    const auto m2 = message_of<tutti::invalid_argument>([] { (void)tutti::bootstrap::job_key_from_env(); });
    CHECK(m2.find("set only one") != std::string::npos);
    messages.push_back(m2);
  }
  {
    scoped_env k("TUTTI_JOB_KEY", nullptr);
    scoped_env f("TUTTI_JOB_KEY_FILE", nullptr);
    CHECK_FALSE(tutti::bootstrap::job_key_from_env().has_value());
  }
  ::unlink(path.c_str());
  ::rmdir(dir);
  for (const auto& m : messages) {
    CHECK(!m.empty());
    CHECK(m.find(secret) == std::string::npos);
  }
}

TEST_CASE("store_address_from_env: TUTTI_STORE_ADDR, then MASTER_ADDR/MASTER_PORT; bad values name the variable") {
  using tutti::bootstrap::parse_store_address;
  using tutti::bootstrap::store_address;
  CHECK(parse_store_address("node1:29500") == store_address{"node1", 29500});
  CHECK(parse_store_address("10.0.0.1:1") == store_address{"10.0.0.1", 1});
  CHECK(parse_store_address("[fe80::1%eth0]:65535") == store_address{"fe80::1%eth0", 65535});
  for (const char* bad : {"node1", "node1:", ":29500", "::1:29500", "[::1]29500", "[::1", "h:0", "h:65536", "h:x1"}) {
    const auto m = message_of<tutti::invalid_argument>([&] { (void)parse_store_address(bad); });
    CHECK_MESSAGE(m.find(std::string("TUTTI_STORE_ADDR='") + bad + "'") != std::string::npos, bad);
  }
  {
    scoped_env s("TUTTI_STORE_ADDR", nullptr);
    scoped_env a("MASTER_ADDR", nullptr);
    scoped_env p("MASTER_PORT", nullptr);
    CHECK_FALSE(tutti::bootstrap::store_address_from_env().has_value());
    scoped_env a2("MASTER_ADDR", "::1");
    CHECK(message_of<tutti::invalid_argument>([] { (void)tutti::bootstrap::store_address_from_env(); })
              .find("MASTER_PORT is not") != std::string::npos);
    scoped_env p2("MASTER_PORT", "29501");
    CHECK(*tutti::bootstrap::store_address_from_env() == store_address{"::1", 29501});
    scoped_env p3("MASTER_PORT", "http");
    CHECK(message_of<tutti::invalid_argument>([] { (void)tutti::bootstrap::store_address_from_env(); })
              .find("MASTER_PORT='http'") != std::string::npos);
    scoped_env s2("TUTTI_STORE_ADDR", "[::1]:4000");  // wins over MASTER_*
    CHECK(*tutti::bootstrap::store_address_from_env() == store_address{"::1", 4000});
  }
}

// --- operations -----------------------------------------------------------------------------

TEST_CASE("tcp_store: set, get, check, add and overwrite between the server rank and a client") {
  tcp_store server(server_options());
  REQUIRE(server.port() != 0);
  tcp_store client(client_options(server.port()));
  CHECK_FALSE(client.check("a"));
  server.set("a", to_bytes("hello"));
  CHECK(client.check("a"));
  CHECK(to_string(client.get("a", deadline::after(2s))) == "hello");
  const store_bytes binary = {0, 255, 0, 7, 128};
  client.set("bin", binary);
  CHECK(server.get("bin", deadline::after(2s)) == binary);
  client.set("bin", {});
  CHECK(server.get("bin", deadline::after(2s)).empty());
  CHECK(server.check("bin"));
  store_bytes large(3 << 20);
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<unsigned char>(i * 7 + 1);
  client.set("large", large);
  CHECK(server.get("large", deadline::after(5s)) == large);
  CHECK(client.add("n", 5) == 5);
  CHECK(server.add("n", -7) == -2);
  CHECK(to_string(client.get("n", deadline::after(2s))) == "-2");
  CHECK(message_of<tutti::invalid_argument>([&] { (void)client.add("a", 1); }).find("'a' does not hold a counter") !=
        std::string::npos);
  CHECK(client.add("n", 0) == -2);  // the connection survived the refused add
}

TEST_CASE("tcp_store: get and wait are answered by the server when the key appears, and time out naming it") {
  tcp_store server(server_options());
  tcp_store client(client_options(server.port()));
  double waited = 0;
  std::string got;
  const auto t0 = clock_type::now();
  std::thread getter([&] {
    got = to_string(client.get("rank0/address", deadline::after(5s)));
    waited = seconds_since(t0);
  });
  std::this_thread::sleep_for(100ms);
  server.set("rank0/address", to_bytes("10.0.0.1:29500"));
  getter.join();
  CHECK(got == "10.0.0.1:29500");
  CHECK(waited >= 0.09);
  CHECK(waited < 2.0);

  std::thread waiter([&] { client.wait({"w0", "w1", "w2"}, deadline::after(5s)); });
  for (const char* k : {"w2", "w0", "w1"}) {
    std::this_thread::sleep_for(20ms);
    server.set(k, to_bytes(k));
  }
  waiter.join();

  const auto t1 = clock_type::now();
  const auto m = message_of<tutti::timeout>([&] { (void)client.get("rank3/never", deadline::after(200ms)); });
  CHECK(m.find("rank 1: tcp_store: key 'rank3/never' was not set before the deadline") != std::string::npos);
  CHECK(seconds_since(t1) >= 0.19);
  CHECK(seconds_since(t1) < 2.0);
  server.set("present", to_bytes("x"));
  const auto m2 = message_of<tutti::timeout>([&] { client.wait({"present", "missing", "gone"}, deadline::after(50ms)); });
  CHECK(m2.find("'missing'") != std::string::npos);
  CHECK(to_string(client.get("present", deadline::after(-1s))) == "x");  // past deadline, key there
}

TEST_CASE("tcp_store: ranks as threads exchange addresses, count concurrently and meet at barriers") {
  constexpr int world = 5;
  tcp_store server(server_options());
  const auto port = server.port();
  std::vector<std::vector<std::string>> seen(world);
  std::vector<int> errors(world, 0);
  std::atomic<int> saw_last{0};
  std::vector<std::thread> ranks;
  for (int r = 1; r < world; ++r)
    ranks.emplace_back([&, r] {
      try {
        tcp_store s(client_options(port, key_a, r));
        s.set("addr/" + std::to_string(r), to_bytes("host" + std::to_string(r)));
        for (int p = 1; p < world; ++p)
          seen[static_cast<std::size_t>(r)].push_back(to_string(s.get("addr/" + std::to_string(p), deadline::after(5s))));
        for (int i = 0; i < 200; ++i)
          if (s.add("count", 1) == 4 * 200) ++saw_last;
        for (int round = 0; round < 3; ++round) s.barrier("b" + std::to_string(round), world - 1, deadline::after(5s));
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = 1;
        MESSAGE(e.what());
      }
    });
  for (auto& t : ranks) t.join();
  for (int r = 1; r < world; ++r) {
    CHECK(errors[static_cast<std::size_t>(r)] == 0);
    for (int p = 1; p < world; ++p)
      CHECK(seen[static_cast<std::size_t>(r)][static_cast<std::size_t>(p - 1)] == "host" + std::to_string(p));
  }
  CHECK(to_string(server.get("count", deadline::after(1s))) == "800");
  CHECK(saw_last == 1);

  // One store shared by threads: a get parked on the server does not block the set of another thread.
  tcp_store shared(client_options(port));
  std::thread getter([&] { CHECK(to_string(shared.get("later", deadline::after(5s))) == "v"); });
  std::this_thread::sleep_for(50ms);
  shared.set("later", to_bytes("v"));
  getter.join();

  const auto m = message_of<tutti::timeout>([&] { server.barrier("lonely", 3, deadline::after(100ms)); });
  CHECK(m.find("barrier 'lonely' saw 1 of 3 callers") != std::string::npos);
}

TEST_CASE("tcp_store: forked processes as ranks, each with its own client") {
  constexpr int children = 3;
  int port_pipe[children][2];
  pid_t pids[children];
  for (int i = 0; i < children; ++i) {
    REQUIRE(::pipe(port_pipe[i]) == 0);
    pids[i] = ::fork();
    REQUIRE(pids[i] >= 0);
    if (pids[i] == 0) {  // a rank: reads the port, then uses the store; the exit status is the verdict
      int code = 1;
      try {
        ::alarm(20);  // bounded whatever happens
        std::uint16_t port = 0;
        if (::read(port_pipe[i][0], &port, sizeof port) != sizeof port) ::_exit(2);
        tcp_store s(client_options(port, key_a, i + 1));
        s.set("proc/" + std::to_string(i), to_bytes(std::to_string(i * 10)));
        s.add("procs", 1);
        s.barrier("proc-barrier", children + 1, deadline::after(10s));
        bool ok = true;
        for (int p = 0; p < children; ++p)
          ok = ok && to_string(s.get("proc/" + std::to_string(p), deadline::after(5s))) == std::to_string(p * 10);
        code = ok ? 0 : 3;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", i, e.what());
        code = 4;
      }
      ::_exit(code);
    }
    ::close(port_pipe[i][0]);
  }
  {
    tcp_store server(server_options());
    const std::uint16_t port = server.port();
    for (int i = 0; i < children; ++i) {
      REQUIRE(::write(port_pipe[i][1], &port, sizeof port) == sizeof port);
      ::close(port_pipe[i][1]);
    }
    server.barrier("proc-barrier", children + 1, deadline::after(10s));
    CHECK(to_string(server.get("procs", deadline::after(5s))) == std::to_string(children));
  }  // the server waits for the children's connections to close
  for (int i = 0; i < children; ++i) {
    int status = 0;
    REQUIRE(::waitpid(pids[i], &status, 0) == pids[i]);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

TEST_CASE("tcp_store: IPv6 loopback and host names") {
  tcp_store server(server_options());
  tcp_store by_name(client_options(server.port(), key_a, 1, "localhost"));
  by_name.set("from-name", to_bytes("1"));
  CHECK(server.check("from-name"));
  if (!ipv6_loopback_available()) {
    MESSAGE("skipped the ::1 part: this host has no IPv6 loopback");
    return;
  }
  auto o = server_options();
  o.bind_address = "::1";
  tcp_store server6(o);
  tcp_store client6(client_options(server6.port(), key_a, 1, "::1"));
  client6.set("six", to_bytes("6"));
  CHECK(to_string(server6.get("six", deadline::after(2s))) == "6");
  auto any = server_options();
  any.bind_address = "";  // every interface, dual stack: reachable over IPv4 and IPv6
  tcp_store server_any(any);
  tcp_store via4(client_options(server_any.port(), key_a, 1, "127.0.0.1"));
  tcp_store via6(client_options(server_any.port(), key_a, 2, "::1"));
  via4.set("k", to_bytes("4"));
  CHECK(to_string(via6.get("k", deadline::after(2s))) == "4");
}

TEST_CASE("tcp_store: clients retry until the server comes up, and say what they could not reach") {
  // A port that was free a moment ago.
  std::uint16_t port = 0;
  {
    tutti::bootstrap::tcp_net::unique_fd probe = tutti::bootstrap::tcp_net::listen_on("127.0.0.1", 0, 0);
    port = tutti::bootstrap::tcp_net::port_of(tutti::bootstrap::tcp_net::local_address(probe.get()));
  }
  const auto t0 = clock_type::now();
  auto o = client_options(port);
  o.timeout = 300ms;
  const auto m = message_of<tutti::timeout>([&] { tcp_store s(o); });
  CHECK(m.find("rank 1: could not reach the tcp_store at 127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(m.find("tried for") != std::string::npos);
  CHECK(seconds_since(t0) < 3.0);

  std::string got;
  std::thread client([&] {
    tcp_store s(client_options(port));  // started before the server
    got = to_string(s.get("hello", deadline::after(5s)));
  });
  std::this_thread::sleep_for(300ms);
  auto so = server_options();
  so.port = port;
  tcp_store server(so);
  server.set("hello", to_bytes("world"));
  client.join();
  CHECK(got == "world");
}

// --- authentication and bad clients ---------------------------------------------------------

TEST_CASE("tcp_store: a wrong key is refused with a clear error, and a second job cannot join the first") {
  stderr_capture log;
  tcp_store job_a(server_options(key_a));
  tcp_store job_b(server_options(key_b));
  std::vector<std::string> messages;
  const auto t0 = clock_type::now();
  messages.push_back(message_of<tutti::invalid_argument>([&] { tcp_store s(client_options(job_a.port(), key_b)); }));
  CHECK(seconds_since(t0) < 3.0);  // refused at once, not at the deadline
  messages.push_back(message_of<tutti::invalid_argument>([&] { tcp_store s(client_options(job_b.port(), key_a)); }));
  for (const auto& m : messages) {
    CHECK(m.find("authentication with the tcp_store at 127.0.0.1:") != std::string::npos);
    CHECK(m.find("wrong TUTTI_JOB_KEY? another job on that port?") != std::string::npos);
  }
  // Each job's own clients are unaffected.
  tcp_store a1(client_options(job_a.port(), key_a));
  tcp_store b1(client_options(job_b.port(), key_b));
  a1.set("job", to_bytes("a"));
  b1.set("job", to_bytes("b"));
  CHECK(to_string(job_a.get("job", deadline::after(1s))) == "a");
  CHECK(to_string(job_b.get("job", deadline::after(1s))) == "b");
  const auto text = log.text();
  CHECK(text.find("[tutti 0] warn: tcp_store: closing the connection from 127.0.0.1:") != std::string::npos);
  CHECK(text.find("authentication failed") != std::string::npos);
  for (const auto* key : {key_a, key_b}) {
    CHECK(text.find(key) == std::string::npos);
    for (const auto& m : messages) CHECK(m.find(key) == std::string::npos);
  }
}

TEST_CASE("tcp_store: a rank refused for its key makes the others' waits fail at once, saying why") {
  stderr_capture log;
  tcp_store server(server_options(key_a));
  tcp_store rank1(client_options(server.port(), key_a));
  std::string parked;
  double parked_seconds = 0;
  std::thread waiter([&] {  // rank 1 waits for what rank 3 would publish
    const auto t0 = clock_type::now();
    try {
      parked = message_of<tutti::invalid_argument>([&] { (void)rank1.get("tutti/t0/node/3", deadline::after(30s)); });
    } catch (const std::exception& e) {
      parked = std::string("another error: ") + e.what();
    }
    parked_seconds = seconds_since(t0);
  });
  std::this_thread::sleep_for(200ms);  // parked on the server by now
  (void)message_of<tutti::invalid_argument>([&] { tcp_store rank3(client_options(server.port(), key_b)); });
  waiter.join();
  INFO(parked);
  CHECK(parked_seconds < 3.0);  // before: the whole 30 s, then "key ... was not set before the deadline"
  CHECK(parked.find("key 'tutti/t0/node/3' will not be set: ") != std::string::npos);
  CHECK(parked.find("a rank was refused by the job's store for a wrong TUTTI_JOB_KEY (the client at 127.0.0.1:") !=
        std::string::npos);
  // A later wait is refused at once too; keys that exist are still served.
  const auto t1 = clock_type::now();
  CHECK(message_of<tutti::invalid_argument>([&] { (void)server.get("never", deadline::after(30s)); })
            .find("wrong TUTTI_JOB_KEY") != std::string::npos);
  CHECK(seconds_since(t1) < 3.0);
  rank1.set("here", to_bytes("yes"));
  CHECK(to_string(server.get("here", deadline::after(1s))) == "yes");
  // A rank that connects only now joins, and is told at once too.
  tcp_store late(client_options(server.port(), key_a));
  CHECK(message_of<tutti::invalid_argument>([&] { (void)late.get("tutti/t0/node/2", deadline::after(30s)); })
            .find("wrong TUTTI_JOB_KEY") != std::string::npos);
  CHECK(parked.find(key_b) == std::string::npos);
}

TEST_CASE("tcp_store: garbage, oversized, unauthenticated, wrong-key and stalled clients are closed; others keep working") {
  stderr_capture log;
  auto so = server_options();
  so.max_frame_bytes = 4096;
  tcp_store server(so);
  const auto port = server.port();
  tcp_store good(client_options(port));
  std::atomic<bool> stop{false};
  std::atomic<int> good_ops{0};
  std::atomic<bool> good_failed{false};
  std::thread worker([&] {  // a well-behaved rank, busy the whole time
    try {
      for (int i = 0; !stop && i < 100000; ++i) {
        good.set("g", to_bytes(std::to_string(i)));
        if (to_string(good.get("g", deadline::after(2s))) != std::to_string(i)) good_failed = true;
        ++good_ops;
        std::this_thread::sleep_for(1ms);
      }
    } catch (const std::exception& e) {
      MESSAGE(e.what());
      good_failed = true;
    }
  });

  raw_client garbage(port);
  garbage.send({'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P', '/', '1', '.', '1', '\r', '\n'});
  CHECK(garbage.closed_by_server());

  raw_client huge_early(port);  // a 1 GiB frame before authenticating
  huge_early.send(header(static_cast<std::uint8_t>(wire::frame_type::response), 1u << 30));
  CHECK(huge_early.closed_by_server());

  raw_client unauthenticated(port);  // a valid request, but no handshake
  unauthenticated.send(wire::encode_request({wire::frame_type::check, {"g"}, {}, 0, 0}));
  CHECK(unauthenticated.closed_by_server());

  raw_client huge_late(port);  // authenticated, then a frame over max_frame_bytes
  REQUIRE(huge_late.handshake(job_key(key_a)));
  huge_late.send(header(static_cast<std::uint8_t>(wire::frame_type::set), 4097));
  CHECK(huge_late.closed_by_server());

  raw_client twice(port);  // a second request while its get is parked
  REQUIRE(twice.handshake(job_key(key_a)));
  twice.send(wire::encode_request({wire::frame_type::get, {"never"}, {}, 0, 5000}));
  twice.send(wire::encode_request({wire::frame_type::check, {"g"}, {}, 0, 0}));
  CHECK(twice.closed_by_server());

  raw_client wrong_key(port);  // after `twice`: from now on a parked get would be refused at once
  CHECK_FALSE(wrong_key.handshake(job_key(key_b)));

  const auto t0 = clock_type::now();
  raw_client slow(port);  // slow loris: half a header, then nothing
  REQUIRE(slow.frame().has_value());  // the challenge
  slow.send({'t', 't', 's'});
  CHECK(slow.closed_by_server());
  const double stalled = seconds_since(t0);
  CHECK(stalled >= 0.25);  // handshake_timeout is 300 ms
  CHECK(stalled < 3.0);

  std::this_thread::sleep_for(50ms);
  stop = true;
  worker.join();
  CHECK_FALSE(good_failed.load());
  CHECK(good_ops > 10);
  CHECK(good.add("still", 1) == 1);
  const auto text = log.text();
  for (const char* why : {"bad magic", "frame larger than the limit (1073741824 bytes declared, limit 64 before authentication)",
                          "unauthenticated 'check' frame", "authentication failed", "(4097 bytes declared, limit 4096)",
                          "while its get was still waiting", "no complete handshake within 0.3 s"})
    CHECK_MESSAGE(text.find(why) != std::string::npos, why);
  CHECK(text.find(key_a) == std::string::npos);
}

// --- shutdown -------------------------------------------------------------------------------

TEST_CASE("tcp_store: the server rank's close waits for clients to finish; a lost server is reported at once") {
  std::uint16_t port = 0;
  std::atomic<bool> late_set_ok{false};
  std::thread client;
  double close_took = 0;
  {
    tcp_store server(server_options());
    port = server.port();
    client = std::thread([&, port] {
      tcp_store s(client_options(port));
      s.barrier("end", 2, deadline::after(5s));
      std::this_thread::sleep_for(200ms);  // rank 0 is already closing by now
      s.set("after", to_bytes("x"));
      late_set_ok = true;
    });
    server.barrier("end", 2, deadline::after(5s));
    const auto t0 = clock_type::now();
    server.close(deadline::after(5s));
    close_took = seconds_since(t0);
  }
  client.join();
  CHECK(late_set_ok.load());
  CHECK(close_took >= 0.1);
  CHECK(close_took < 3.0);

  // A client parked in get sees peer_lost(0) as soon as the server stops, not at its deadline.
  auto server = std::make_unique<tcp_store>(server_options());
  tcp_store parked(client_options(server->port()));
  std::thread killer([&] {
    std::this_thread::sleep_for(150ms);
    server->close(deadline::after(0s));  // gives up waiting for clients at once
  });
  const auto t0 = clock_type::now();
  int lost_peer = -1;
  std::string message;
  try {
    (void)parked.get("never", deadline::after(10s));
  } catch (const tutti::peer_lost& e) {
    lost_peer = e.peer();
    message = e.what();
  }
  killer.join();
  CHECK(lost_peer == 0);
  CHECK(message.find("rank 1: lost the tcp_store server (rank 0) at 127.0.0.1:") != std::string::npos);
  CHECK(message.find("get('never')") != std::string::npos);
  CHECK(seconds_since(t0) < 3.0);
  CHECK(message_of<tutti::error>([&] { server->set("x", {}); }).find("used after close()") != std::string::npos);
}

namespace {
//! A tcp_store server in a child process of this test, until the test kills it (alarm: 20 s at
//! most): its pid and port.
std::pair<pid_t, std::uint16_t> server_in_child() {
  int port_pipe[2];
  REQUIRE(::pipe(port_pipe) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(20);
    try {
      tcp_store server(server_options());
      const std::uint16_t port = server.port();
      if (::write(port_pipe[1], &port, sizeof port) != sizeof port) ::_exit(2);
      ::pause();  // until killed
    } catch (...) {
    }
    ::_exit(3);
  }
  ::close(port_pipe[1]);
  std::uint16_t port = 0;
  REQUIRE(::read(port_pipe[0], &port, sizeof port) == sizeof port);
  ::close(port_pipe[0]);
  return {pid, port};
}
}  // namespace

TEST_CASE("tcp_store: a server process killed by SIGKILL mid-wait: the client errors within seconds") {
  const auto [pid, port] = server_in_child();
  tcp_store client(client_options(port));
  client.set("k", to_bytes("v"));
  std::thread killer([&] {
    std::this_thread::sleep_for(200ms);
    ::kill(pid, SIGKILL);
  });
  auto t0 = clock_type::now();
  const auto m = message_of<tutti::peer_lost>([&] { (void)client.get("never", deadline::after(15s)); });
  killer.join();
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(m.find("lost the tcp_store server (rank 0) at 127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(seconds_since(t0) < 3.0);
  // A later call needs a new connection, which the port refuses: a server this client has talked
  // to is gone, peer_lost at once, not a retry until the deadline (a fault campaign's survivors
  // took a killed rank 0 for a stopped one after a second of retries: first_loss.hpp).
  t0 = clock_type::now();
  int lost_peer = -1;
  std::string refused;
  try {
    client.set("k2", to_bytes("v"), deadline::after(5s));
  } catch (const tutti::peer_lost& e) {
    lost_peer = e.peer();
    refused = e.what();
  }
  CHECK(lost_peer == 0);
  CHECK(refused.find("lost the tcp_store server (rank 0) at 127.0.0.1:" + std::to_string(port) +
                     ": its port refuses connections (") != std::string::npos);
  CHECK(seconds_since(t0) < 1.0);
  // A new client's first contact still retries (the server may start after it), within its deadline.
  auto o = client_options(port);
  o.timeout = 200ms;
  CHECK_THROWS_AS([&] { tcp_store s(o); }(), tutti::timeout);
}

TEST_CASE("tcp_store: a server that stopped answering is not asked again by short calls; long ones try, and its answer ends that") {
  const auto [pid, port] = server_in_child();
  tcp_store client(client_options(port));
  client.set("k", to_bytes("v"));
  REQUIRE(::kill(pid, SIGSTOP) == 0);  // alive, silent: the kernel still takes its connections
  int stopped = 0;
  REQUIRE(::waitpid(pid, &stopped, WUNTRACED) == pid);  // stopped by now, not about to be
  REQUIRE(WIFSTOPPED(stopped));
  auto t0 = clock_type::now();
  const auto first = message_of<tutti::timeout>([&] { client.set("k2", to_bytes("v"), deadline::after(300ms)); });
  CHECK(first.find("did not answer") != std::string::npos);
  CHECK(seconds_since(t0) < 1.5);  // its deadline and the reply's allowance (250 ms), not 2 s more
  t0 = clock_type::now();
  const auto second = message_of<tutti::timeout>([&] { (void)client.check("k", deadline::after(1s)); });
  CHECK(seconds_since(t0) < 0.1);  // at once
  CHECK(second.find("tcp_store at 127.0.0.1:" + std::to_string(port) + " was not asked: it left a call unanswered") !=
        std::string::npos);
  CHECK(second.find("did not answer") != std::string::npos);  // and what that was
  // A call with a long deadline still asks, and is answered once the server runs again.
  std::thread waker([pid = pid] {
    std::this_thread::sleep_for(300ms);
    ::kill(pid, SIGCONT);
  });
  t0 = clock_type::now();
  CHECK(client.check("k", deadline::after(8s)));
  waker.join();
  CHECK(seconds_since(t0) >= 0.25);
  CHECK(client.check("k", deadline::after(300ms)));  // the silence is over: short calls ask again
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

TEST_CASE("tcp_store: limits and arguments are checked before anything is sent") {
  auto so = server_options();
  so.max_frame_bytes = 1024;
  tcp_store server(so);
  auto co = client_options(server.port());
  co.max_frame_bytes = 1024;
  tcp_store client(co);
  CHECK(message_of<tutti::invalid_argument>([&] { client.set("big", store_bytes(2000)); })
            .find("exceeds max_frame_bytes=1024 (TUTTI_STORE_MAX_FRAME)") != std::string::npos);
  CHECK(message_of<tutti::invalid_argument>([&] { client.set(std::string(5000, 'k'), {}); })
            .find("key of 5000 bytes") != std::string::npos);
  CHECK(message_of<tutti::invalid_argument>([&] { client.barrier("b", 0, deadline::after(1s)); })
            .find("count=0") != std::string::npos);
  client.set("fits", store_bytes(900));
  CHECK(server.get("fits", deadline::after(1s)).size() == 900);
  CHECK_THROWS_AS([] { tcp_store s(tcp_store_options{}); }(), tutti::invalid_argument);  // no key
  auto no_host = client_options(0);
  CHECK(message_of<tutti::invalid_argument>([&] { tcp_store s(no_host); }).find("needs the server's host and port") !=
        std::string::npos);
}

#else

TEST_CASE("tcp_store: not built (OpenSSL's libcrypto not found, so tutti::net is missing)") {
  MESSAGE("skipped: tutti::net (OpenSSL libcrypto) is not available");
}

#endif
