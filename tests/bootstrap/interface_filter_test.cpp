//! TUTTI_NET_IFACE in NCCL's syntax: prefixes, ^ exclusion, = exact names, and refused malformed text.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "tutti/bootstrap/interface_filter.hpp"

using tutti::bootstrap::interface_filter;

TEST_CASE("interface_filter: empty allows everything") {
  const auto f = interface_filter::parse("");
  CHECK(f.allows_all());
  CHECK(f.allows("eth0"));
  CHECK(f.allows("lo"));
}

TEST_CASE("interface_filter: prefixes") {
  const auto f = interface_filter::parse("eth,ib");
  CHECK(f.allows("eth0"));
  CHECK(f.allows("eth12"));
  CHECK(f.allows("ib1"));
  CHECK_FALSE(f.allows("docker0"));
  CHECK_FALSE(f.allows("et"));  // shorter than the prefix
  CHECK_FALSE(f.allows("lo"));
}

TEST_CASE("interface_filter: ^ excludes the whole list") {
  const auto f = interface_filter::parse("^docker,lo,veth");
  CHECK(f.allows("eth0"));
  CHECK_FALSE(f.allows("docker0"));
  CHECK_FALSE(f.allows("lo"));
  CHECK_FALSE(f.allows("veth1a2b"));
}

TEST_CASE("interface_filter: = exact names, ^= exact exclusion") {
  const auto exact = interface_filter::parse("=eth0,ib1");
  CHECK(exact.allows("eth0"));
  CHECK(exact.allows("ib1"));
  CHECK_FALSE(exact.allows("eth01"));
  CHECK_FALSE(exact.allows("eth"));
  const auto not_exact = interface_filter::parse("^=eth0");
  CHECK_FALSE(not_exact.allows("eth0"));
  CHECK(not_exact.allows("eth01"));
  CHECK(not_exact.allows("ib0"));
}

TEST_CASE("interface_filter: malformed text is refused, naming the variable and the value") {
  for (const char* text : {"eth,,ib", ",eth", "eth,", "^", "=", "^=", "eth,^ib", "eth,=ib0", "eth 0"}) {
    CAPTURE(text);
    const std::string expected = std::string("TUTTI_NET_IFACE='") + text + "'";
    CHECK_THROWS_WITH_AS(interface_filter::parse(text), doctest::Contains(expected.c_str()), tutti::invalid_argument);
  }
  CHECK_THROWS_AS(interface_filter::parse(std::string(2000, 'e')), tutti::invalid_argument);
}

TEST_CASE("interface_filter: from_env reads TUTTI_NET_IFACE") {
  ::setenv("TUTTI_NET_IFACE", "^lo", 1);
  CHECK_FALSE(interface_filter::from_env().allows("lo"));
  CHECK(interface_filter::from_env().text() == "^lo");
  ::unsetenv("TUTTI_NET_IFACE");
  CHECK(interface_filter::from_env().allows_all());
}
