//! @file interface_filter.hpp  TUTTI_NET_IFACE: which network interfaces a job may use, in NCCL's syntax.
//!
//! The same text as NCCL_SOCKET_IFNAME, so one habit serves every layer: a comma-separated list of
//! name prefixes (`eth,ib` allows eth0 and ib1); a leading `^` turns the whole list into an
//! exclusion list (`^docker,lo`); a leading `=` makes every entry an exact name (`=eth0`), and `^=`
//! excludes exact names. An empty or unset variable allows everything. Malformed text (an empty
//! entry, a `^` or `=` inside the list) is refused, naming the variable and the value, rather than
//! read as something the user did not mean.
//! (Interface discovery across hosts and the hand-off to UCX_NET_DEVICES are not built yet.)
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"

namespace tutti::bootstrap {

class interface_filter {
 public:
  //! Allows every interface.
  interface_filter() = default;

  //! Parses `text`; `source` names where it came from in error messages (e.g. "TUTTI_NET_IFACE").
  static interface_filter parse(std::string_view text, std::string_view source = "TUTTI_NET_IFACE") {
    interface_filter f;
    f.text_ = std::string(text);
    auto bad = [&](std::string_view why) {  // appended piece by piece: GCC 12 warns (-Wrestrict) on a + chain
      std::string m(source);
      m += "='";
      m += f.text_;  // the whole value as given (text itself loses its leading ^ and = below)
      m += "': ";
      m += why;
      m += " (expected NCCL's syntax: prefixes separated by commas, optionally starting with ^ to exclude and = for "
           "exact names, e.g. 'eth,ib', '^docker,lo', '=eth0')";
      throw invalid_argument(m);
    };
    if (text.empty()) return f;
    if (text.size() > 1024) bad("longer than 1024 characters");
    if (text.front() == '^') {
      f.exclude_ = true;
      text.remove_prefix(1);
    }
    if (!text.empty() && text.front() == '=') {
      f.exact_ = true;
      text.remove_prefix(1);
    }
    if (text.empty()) bad("no interface names after the leading ^ or =");
    for (std::size_t start = 0;;) {
      const std::size_t comma = text.find(',', start);
      const std::string_view entry = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
      if (entry.empty()) bad("an empty entry");
      if (entry.find_first_of("^=") != std::string_view::npos) bad("'^' and '=' may only lead the whole list");
      if (entry.find_first_of(" \t/") != std::string_view::npos) bad("an entry that is not an interface name");
      f.entries_.emplace_back(entry);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return f;
  }

  //! From TUTTI_NET_IFACE (unset or empty: everything allowed).
  static interface_filter from_env() {
    auto v = config::raw("TUTTI_NET_IFACE");
    return v ? parse(*v) : interface_filter{};
  }

  //! Whether the job may use interface `name`.
  [[nodiscard]] bool allows(std::string_view name) const {
    if (entries_.empty()) return true;
    bool listed = false;
    for (const auto& e : entries_)
      if (exact_ ? name == e : name.starts_with(e)) listed = true;
    return listed != exclude_;
  }

  [[nodiscard]] bool allows_all() const noexcept { return entries_.empty(); }
  [[nodiscard]] const std::string& text() const noexcept { return text_; }  //!< as given, for messages

 private:
  std::vector<std::string> entries_;
  bool exclude_ = false;
  bool exact_ = false;
  std::string text_;
};

}  // namespace tutti::bootstrap
