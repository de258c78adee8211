//! @file tcp_store_service_test.cpp  tcp_store's service without sockets: answers, parked waits, deadlines, refusals.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tutti/bootstrap/tcp_store/service.hpp"

namespace {

namespace wire = tutti::bootstrap::tcp_wire;
using tutti::bootstrap::tcp_detail::outgoing;
using tutti::bootstrap::tcp_detail::server_clock;
using tutti::bootstrap::tcp_detail::store_service;

std::vector<unsigned char> bytes(const std::string& s) { return {s.begin(), s.end()}; }

//! The reply a frame carries (parsed as a client would).
wire::reply reply_of(const outgoing& o) {
  const auto f = wire::parse_frame(o.frame, 1 << 20);
  REQUIRE(f.what == wire::parse_result::status::frame);
  auto r = wire::decode_reply(f.type, f.payload);
  REQUIRE(r.has_value());
  return *r;
}

wire::request request(wire::frame_type t, std::vector<std::string> keys, std::uint64_t wait_ms = 0) {
  return {t, std::move(keys), {}, 0, wait_ms};
}

}  // namespace

TEST_CASE("tcp_store service: set, get, check, add answer at once; a missing key parks until it is set") {
  store_service s;
  const auto now = server_clock::now();
  std::vector<outgoing> out;
  s.handle(1, request(wire::frame_type::get, {"k"}, 1000), now, out);
  s.handle(2, request(wire::frame_type::wait, {"k", "j"}, 1000), now, out);
  CHECK(out.empty());
  REQUIRE(s.parked_of(1) != nullptr);
  CHECK(s.parked_of(1)->type == wire::frame_type::get);
  CHECK(s.next_deadline(now + std::chrono::hours(1)) == now + std::chrono::milliseconds(1000));

  s.handle(3, {wire::frame_type::set, {"k"}, bytes("v"), 0, 0}, now, out);
  REQUIRE(out.size() == 2);  // the setter's ok, then the get it completed; the wait still lacks "j"
  CHECK(out[0].to == 3);
  CHECK(reply_of(out[0]).type == wire::frame_type::ok);
  CHECK(out[1].to == 1);
  CHECK(reply_of(out[1]).value == bytes("v"));
  CHECK(s.parked_of(1) == nullptr);
  CHECK(s.parked_of(2) != nullptr);

  out.clear();
  s.handle(3, {wire::frame_type::add, {"j"}, {}, 5, 0}, now, out);
  REQUIRE(out.size() == 2);
  CHECK(reply_of(out[0]).counter == 5);
  CHECK(out[1].to == 2);
  CHECK(reply_of(out[1]).type == wire::frame_type::ok);

  out.clear();
  s.handle(3, request(wire::frame_type::check, {"j"}), now, out);
  s.handle(3, {wire::frame_type::add, {"k"}, {}, 1, 0}, now, out);
  REQUIRE(out.size() == 2);
  CHECK(reply_of(out[0]).flag);
  CHECK(reply_of(out[1]).code == wire::error_code::not_counter);
  CHECK(reply_of(out[1]).text == "key 'k' does not hold a counter");
}

TEST_CASE("tcp_store service: deadlines answer with a timeout; a closed connection's wait is forgotten") {
  store_service s;
  const auto now = server_clock::now();
  std::vector<outgoing> out;
  s.handle(1, request(wire::frame_type::get, {"never"}, 10), now, out);
  s.handle(2, request(wire::frame_type::get, {"never"}, 10), now, out);
  s.forget(2);
  s.expire(now, out);
  CHECK(out.empty());
  s.expire(now + std::chrono::milliseconds(10), out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].to == 1);
  CHECK(reply_of(out[0]).code == wire::error_code::timeout);
  CHECK(reply_of(out[0]).text == "key 'never' was not set before the deadline");
  CHECK(s.parked_of(1) == nullptr);
}

TEST_CASE("tcp_store service: a refused client ends every parked and later wait, saying why") {
  store_service s;
  const auto now = server_clock::now();
  std::vector<outgoing> out;
  s.handle(1, request(wire::frame_type::wait, {"a"}, 1000), now, out);
  s.refuse("10.0.0.7:4000", out);
  REQUIRE(out.size() == 1);
  CHECK(reply_of(out[0]).code == wire::error_code::refused);
  CHECK(reply_of(out[0]).text.starts_with("key 'a' will not be set: a rank was refused by the job's store for a wrong "
                                          "TUTTI_JOB_KEY (the client at 10.0.0.7:4000)"));
  out.clear();
  s.refuse("10.0.0.8:4000", out);
  s.handle(2, request(wire::frame_type::get, {"b"}, 1000), now, out);
  REQUIRE(out.size() == 1);
  CHECK(reply_of(out[0]).text.find("(the client at 10.0.0.8:4000, and 1 more)") != std::string::npos);
  CHECK(s.parked_of(2) == nullptr);
  // A key that is set still answers.
  out.clear();
  s.handle(3, {wire::frame_type::set, {"b"}, bytes("x"), 0, 0}, now, out);
  s.handle(2, request(wire::frame_type::get, {"b"}, 1000), now, out);
  REQUIRE(out.size() == 2);
  CHECK(reply_of(out[1]).value == bytes("x"));
}
