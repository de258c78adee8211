//! @file yaml_reader.hpp  A strict reader of YAML: typed values and checked mappings, each error at its line.
//!
//! Knows nothing of Determined: determined_schema.hpp says which keys exist and what each must be;
//! this file reads them strictly. A mapping refuses a key that is not a scalar, a key given twice
//! and a key not among the known ones (with a suggestion, did_you_mean.hpp); a value of the wrong
//! type is refused as `<source>:<line>: <dotted key>: expected <what>, got '<value>'`. Scalars are
//! read as Determined's loader reads them: a quoted scalar is text even when it looks like a
//! number, and booleans are YAML 1.2's `true`/`false` only. Parsing is yaml-cpp's (tutti::yaml).
#pragma once
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "tutti/core/error.hpp"
#include "tutti/core/did_you_mean.hpp"

namespace tutti::trainer::config_detail {

using spelling::closest;  // core/did_you_mean.hpp
using spelling::suggestion;

// "<source>:<line>: ", or "<source>: " where there is no line (a key that is missing altogether).
[[nodiscard]] inline std::string where(const std::string& source, int line) {
  return line > 0 ? source + ":" + std::to_string(line) + ": " : source + ": ";
}

// The 1-based line of a node, 0 when it has none (yaml-cpp counts from 0).
[[nodiscard]] inline int line_of(const YAML::Node& n) {
  if (!n.IsDefined()) return 0;
  const YAML::Mark m = n.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

// A quoted scalar ("5", '5') is text even when it looks like a number, as in Determined's loader:
// yaml-cpp tags quoted scalars "!" and plain ones "?".
[[nodiscard]] inline bool quoted(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; }

// How a value is shown after "got".
[[nodiscard]] inline std::string shown(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'" + (quoted(n) ? " (quoted, so text)" : "");
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  return "nothing";
}

[[nodiscard]] inline std::optional<std::size_t> to_unsigned(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  unsigned long long v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v > std::numeric_limits<std::size_t>::max())
    return std::nullopt;
  return static_cast<std::size_t>(v);
}

[[nodiscard]] inline std::optional<double> to_number(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// YAML 1.2's booleans, as Determined's loader reads them (not YAML 1.1's yes/no/on/off).
[[nodiscard]] inline std::optional<bool> to_flag(std::string_view s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

// The document in `text`; YAML that does not parse is refused as "<source>:<line>:<column>:
// invalid YAML: <yaml-cpp's reason>".
[[nodiscard]] inline YAML::Node load_document(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) throw invalid_argument(source + ": invalid YAML: " + e.msg);
    throw invalid_argument(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                           ": invalid YAML: " + e.msg);
  }
}

// Reads values out of YAML nodes for one source, throwing invalid_argument that names the source,
// the line, the dotted key and the value.
class reader {
 public:
  explicit reader(std::string source) : source_(std::move(source)) {}

  [[nodiscard]] const std::string& source() const noexcept { return source_; }
  [[nodiscard]] std::string at(const YAML::Node& n) const { return where(source_, line(n)); }

  // yaml-cpp marks an empty value (`max_restarts:` and nothing) where the next token starts, often
  // the next line; so the line of its key is kept here and reported instead.
  void empty_value(const YAML::Node& value, const YAML::Node& key) const {
    if (value.IsNull()) empty_values_.emplace_back(value, line_of(key));
  }
  [[nodiscard]] int line(const YAML::Node& n) const {
    if (n.IsDefined() && n.IsNull())
      for (const auto& [value, key_line] : empty_values_)
        if (value.is(n)) return key_line;
    return line_of(n);
  }

  [[noreturn]] void fail(const YAML::Node& n, const std::string& what) const { throw invalid_argument(at(n) + what); }
  [[noreturn]] void expected(const YAML::Node& n, const std::string& key, const std::string& what) const {
    fail(n, key + ": expected " + what + ", got " + shown(n));
  }
  //! `key` is absent; the message points at its parent's line when there is a parent.
  [[noreturn]] void missing(const YAML::Node* parent, const std::string& key, const std::string& hint) const {
    throw invalid_argument(where(source_, parent ? line(*parent) : 0) + "missing required key '" + key + "' (" +
                           hint + ")");
  }

  [[nodiscard]] std::size_t positive_integer(const YAML::Node& n, const std::string& key) const {
    const auto v = n.IsScalar() && !quoted(n) ? to_unsigned(n.Scalar()) : std::nullopt;
    if (!v || *v == 0) expected(n, key, "a positive integer");
    return *v;
  }
  [[nodiscard]] std::size_t non_negative_integer(const YAML::Node& n, const std::string& key) const {
    const auto v = n.IsScalar() && !quoted(n) ? to_unsigned(n.Scalar()) : std::nullopt;
    if (!v) expected(n, key, "a non-negative integer");
    return *v;
  }
  [[nodiscard]] double number(const YAML::Node& n, const std::string& key) const {
    const auto v = n.IsScalar() && !quoted(n) ? to_number(n.Scalar()) : std::nullopt;
    if (!v) expected(n, key, "a number");
    return *v;
  }
  [[nodiscard]] bool flag(const YAML::Node& n, const std::string& key) const {
    const auto v = n.IsScalar() && !quoted(n) ? to_flag(n.Scalar()) : std::nullopt;
    if (!v) expected(n, key, "true or false");
    return *v;
  }
  [[nodiscard]] std::string text(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar() || n.Scalar().empty()) expected(n, key, "text");
    return n.Scalar();
  }

 private:
  std::string source_;
  mutable std::vector<std::pair<YAML::Node, int>> empty_values_;
};

// One YAML mapping with its keys checked: each a scalar, none twice, each among `known` (unless
// `known` is empty: any key). Lookups by key afterwards.
class mapping {
 public:
  struct entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };

  // `unsupported`: keys that are not typos but known to be refused, each with the same reason
  // (`unsupported_why`) rather than a suggestion.
  mapping(const reader& r, const YAML::Node& node, std::string path, std::vector<std::string_view> known,
          std::vector<std::string_view> unsupported = {}, std::string_view unsupported_why = {})
      : path_(std::move(path)) {
    if (!node.IsMap()) r.expected(node, path_, "a mapping");
    // By value: yaml-cpp's iterator-> returns a temporary proxy, so a reference to it->first dangles.
    for (const auto& kv : node) {
      const YAML::Node k = kv.first;
      if (!k.IsScalar()) r.fail(k, (path_.empty() ? std::string() : path_ + ": ") + "expected a key, got " + shown(k));
      const std::string name = k.Scalar();
      for (const auto& e : entries_)
        if (e.key == name)
          r.fail(k, "duplicate key '" + dotted(name) + "' (first at line " + std::to_string(line_of(e.key_node)) + ")");
      if (!known.empty() && std::find(known.begin(), known.end(), name) == known.end()) {
        if (std::find(unsupported.begin(), unsupported.end(), name) != unsupported.end())
          r.fail(k, "unsupported key '" + dotted(name) + "': " + std::string(unsupported_why));
        const std::string best = closest(name, known);
        r.fail(k, "unknown key '" + dotted(name) + "'" + suggestion(best.empty() ? best : dotted(best)));
      }
      r.empty_value(kv.second, k);
      entries_.push_back({name, k, kv.second});
    }
  }

  [[nodiscard]] std::optional<YAML::Node> get(std::string_view key) const {
    for (const auto& e : entries_)
      if (e.key == key) return e.value;
    return std::nullopt;
  }
  // The key itself (for its line: a block mapping's own mark is its first entry's line).
  [[nodiscard]] std::optional<YAML::Node> key_node(std::string_view key) const {
    for (const auto& e : entries_)
      if (e.key == key) return e.key_node;
    return std::nullopt;
  }
  [[nodiscard]] std::string dotted(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  [[nodiscard]] const std::vector<entry>& entries() const noexcept { return entries_; }

 private:
  std::string path_;
  std::vector<entry> entries_;
};

}  // namespace tutti::trainer::config_detail
