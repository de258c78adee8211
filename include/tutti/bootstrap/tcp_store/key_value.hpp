//! @file key_value.hpp  tcp_store's state: the keys and values, counters, and why waits are being refused.
//!
//! Pure data with no sockets: the server (server.hpp) decides when to answer whom; this says what
//! the store holds and what a request against it yields.
#pragma once
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

namespace tutti::bootstrap::tcp_detail {

class key_value_table {
 public:
  void set(const std::string& key, std::vector<unsigned char> value) { values_[key] = std::move(value); }
  [[nodiscard]] bool has(const std::string& key) const { return values_.count(key) != 0; }
  [[nodiscard]] const std::vector<unsigned char>& at(const std::string& key) const { return values_.at(key); }

  //! The first of `keys` that is not set, or nullptr when all are.
  [[nodiscard]] const std::string* missing(const std::vector<std::string>& keys) const {
    for (const auto& k : keys)
      if (!values_.count(k)) return &k;
    return nullptr;
  }

  //! Adds `delta` to the decimal counter at `key` (a missing or empty key counts from 0, and
  //! arithmetic wraps as on the client's u64); nullopt, leaving the value as it was, when the key
  //! holds something other than decimal text.
  [[nodiscard]] std::optional<std::int64_t> add(const std::string& key, std::int64_t delta) {
    auto& text = values_[key];
    std::int64_t v = 0;
    if (!text.empty()) {
      const auto* first = reinterpret_cast<const char*>(text.data());
      const auto [end, ec] = std::from_chars(first, first + text.size(), v);
      if (ec != std::errc{} || end != first + text.size()) return std::nullopt;
    }
    v = static_cast<std::int64_t>(static_cast<std::uint64_t>(v) + static_cast<std::uint64_t>(delta));
    const auto out = std::to_string(v);
    text.assign(out.begin(), out.end());
    return v;
  }

  //! A client at `peer` failed the handshake: from now on a wait whose keys are missing cannot end.
  void refuse_for(const std::string& peer) {
    ++refusals_;
    refusal_ = "a rank was refused by the job's store for a wrong TUTTI_JOB_KEY (the client at " + peer +
               (refusals_ > 1 ? ", and " + std::to_string(refusals_ - 1) + " more" : std::string()) +
               "), so it cannot join and this wait cannot end: every rank needs the same TUTTI_JOB_KEY (tutti-run "
               "sets it)";
  }
  [[nodiscard]] bool refusing() const noexcept { return !refusal_.empty(); }
  //! Why a wait on `keys` is refused (refusing() is true).
  [[nodiscard]] std::string refused_text(const std::vector<std::string>& keys) const {
    const std::string* key = missing(keys);
    return "key '" + (key ? *key : std::string("?")) + "' will not be set: " + refusal_;
  }

 private:
  std::unordered_map<std::string, std::vector<unsigned char>> values_;
  std::string refusal_;  //!< why waits are refused, once a client failed the handshake
  std::size_t refusals_ = 0;
};

}  // namespace tutti::bootstrap::tcp_detail
