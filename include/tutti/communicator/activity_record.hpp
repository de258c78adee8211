//! @file activity_record.hpp  What the stall inspector posts about a rank, and the diagnosis it
//! writes from every rank's posts (stall_inspector.hpp runs it; transport/activity_board.hpp keeps them).
//!
//! Times are wall-clock milliseconds (system_clock), because ranks on different hosts compare
//! them: hosts whose clocks disagree by more than a second skew the "for N s" figures, not who is
//! named. Whether a rank is alive is judged by when it last posted: its watchdog posts every
//! period even when nothing changed, so a rank silent for several periods is stopped (SIGSTOP, a
//! debugger, a swapped-out host) or cut off.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/core/message.hpp"

namespace tutti::detail {

//! Where one thread of a rank stands in its collectives, in one word the collective path writes
//! with one relaxed store: call number << 8 | kind << 2 | state.
enum class call_state : std::uint8_t { none, inside, returned, failed };

[[nodiscard]] constexpr std::uint64_t pack_call(std::uint64_t number, std::uint8_t kind, call_state s) noexcept {
  return number << 8 | std::uint64_t{kind} << 2 | static_cast<std::uint64_t>(s);
}
[[nodiscard]] constexpr call_state state_of(std::uint64_t word) noexcept { return static_cast<call_state>(word & 3); }
//! The word with its state cleared: the same for two ranks in the same collective.
[[nodiscard]] constexpr std::uint64_t call_of(std::uint64_t word) noexcept { return word & ~std::uint64_t{3}; }

//! "allreduce #7", or "fused allreduce #40" for the fusion engine's.
[[nodiscard]] inline std::string call_text(std::uint64_t word, bool fused) {
  const auto kind = static_cast<collective>((word >> 2) & 63);
  return std::string(fused ? "fused " : "") + std::string(name_of(kind)) + " #" + std::to_string(word >> 8);
}

[[nodiscard]] inline std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

//! "61 s", or "2.5 s" under ten seconds.
[[nodiscard]] inline std::string seconds_text(std::int64_t ms) {
  char b[32];
  const double s = static_cast<double>(ms < 0 ? 0 : ms) / 1000.0;
  std::snprintf(b, sizeof b, s < 10 ? "%.1f s" : "%.0f s", s);
  return b;
}

struct activity_record {
  std::uint64_t call = 0;         //!< the blocking collectives' word (pack_call)
  std::int64_t call_since = 0;    //!< when it last changed, as the watchdog saw it
  std::uint64_t fused = 0;        //!< the fusion engine's collectives' word
  std::int64_t fused_since = 0;
  std::int64_t posted = 0;        //!< when this record was posted
  std::int64_t tensor_since = 0;  //!< when the oldest tensor in allreduce_async's hands was enqueued
  std::string tensor;             //!< its name; empty: none in flight

  [[nodiscard]] std::string encode() const {
    return "a1 " + std::to_string(call) + " " + std::to_string(call_since) + " " + std::to_string(fused) + " " +
           std::to_string(fused_since) + " " + std::to_string(posted) + " " + std::to_string(tensor_since) + " " +
           tensor;
  }
  //! nullopt for a record this version cannot read (empty, cut, or another format).
  [[nodiscard]] static std::optional<activity_record> decode(std::string_view text) {
    activity_record r;
    unsigned long long c = 0, f = 0;
    long long cs = 0, fs = 0, p = 0, ts = 0;
    int used = 0;
    const std::string s(text);
    if (std::sscanf(s.c_str(), "a1 %llu %lld %llu %lld %lld %lld %n", &c, &cs, &f, &fs, &p, &ts, &used) != 6 ||
        used <= 0)
      return std::nullopt;
    r.call = c, r.call_since = cs, r.fused = f, r.fused_since = fs, r.posted = p, r.tensor_since = ts;
    r.tensor = s.substr(static_cast<std::size_t>(used));
    return r;
  }
};

//! Every rank's post decoded (nullopt where a rank posted none, or something unreadable).
[[nodiscard]] inline std::vector<std::optional<activity_record>> decode_all(const std::vector<std::string>& posts) {
  std::vector<std::optional<activity_record>> records;
  for (const auto& p : posts) records.push_back(activity_record::decode(p));
  return records;
}

//! What a rank was doing, in words; `timed` false gives the same words without durations (to group
//! ranks doing the same thing).
[[nodiscard]] inline std::string describe_activity(const activity_record& r, std::int64_t now,
                                                   std::int64_t silent_after, bool timed) {
  const auto ago = [&](std::int64_t t) { return timed ? " " + seconds_text(now - t) : std::string(); };
  std::string s;
  switch (state_of(r.call)) {
    case call_state::none: s = "no collective called yet"; break;
    case call_state::inside: s = "in " + call_text(r.call, false) + (timed ? " for" + ago(r.call_since) : ""); break;
    case call_state::returned: s = "returned from " + call_text(r.call, false) + (timed ? ago(r.call_since) + " ago" : ""); break;
    case call_state::failed: s = "failed in " + call_text(r.call, false) + (timed ? ago(r.call_since) + " ago" : ""); break;
  }
  if (state_of(r.fused) == call_state::inside)
    s += ", its fusion engine in " + call_text(r.fused, true) + (timed ? " for" + ago(r.fused_since) : "");
  if (now - r.posted > silent_after)
    s += ", silent" + (timed ? " for" + ago(r.posted) : std::string()) + " (stopped, or its host unreachable)";
  else
    s += ", alive";
  return s;
}

//! "rank 1" or "ranks 1, 3-5".
[[nodiscard]] inline std::string ranks_text(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks);
}

//! Ranks grouped by what they were doing: "rank 1 (returned from allreduce #6 62 s ago, alive); ranks 2-3 (...)".
[[nodiscard]] inline std::string grouped_activity(const std::vector<int>& ranks,
                                                  const std::vector<std::optional<activity_record>>& records,
                                                  std::int64_t now, std::int64_t silent_after) {
  std::map<std::string, std::pair<std::vector<int>, std::string>> groups;  // untimed words -> ranks, timed words
  std::vector<std::string> order;
  for (int r : ranks) {
    const auto& rec = records[static_cast<std::size_t>(r)];
    const std::string key = rec ? describe_activity(*rec, now, silent_after, false) : "no record";
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) {
      order.push_back(key);
      it->second.second = rec ? describe_activity(*rec, now, silent_after, true)
                              : "no record: it has not started its communicator, or the board is out of reach";
    }
    it->second.first.push_back(r);
  }
  std::string out;
  for (const auto& key : order) {
    const auto& [who, words] = groups[key];
    out += (out.empty() ? "" : "; ") + ranks_text(who) + " (" + words + ")";
  }
  return out;
}

//! The one line the inspector logs, and the verdict at the deadline: which ranks are in the
//! collective `word` (kind and number; `fused` for the engine's), which are missing and what those
//! were last seen doing. `records[r]` is rank r's post ("" when none); `since` when `self` entered.
[[nodiscard]] inline std::string diagnose(int self, bool fused, std::uint64_t word, std::int64_t since,
                                          std::int64_t now, std::int64_t silent_after,
                                          const std::vector<std::string>& posts) {
  const auto records = decode_all(posts);
  std::vector<int> there, silent_there, past, missing;
  for (int r = 0; r < static_cast<int>(records.size()); ++r) {
    const auto& rec = records[static_cast<std::size_t>(r)];
    const std::uint64_t w = rec ? (fused ? rec->fused : rec->call) : 0;
    const bool in_it = r == self || (rec && state_of(w) == call_state::inside && call_of(w) == call_of(word));
    // Done with it (returned from it, or in a later one): not missing. A slow link leaves the
    // ranks on its near side waiting while the others have moved on.
    const bool beyond = rec && !in_it &&
                        ((w >> 8) > (word >> 8) || (call_of(w) == call_of(word) && state_of(w) == call_state::returned));
    if (beyond) past.push_back(r);
    else if (!in_it) missing.push_back(r);
    else if (r != self && now - rec->posted > silent_after) silent_there.push_back(r);
    else there.push_back(r);
  }
  std::string s = call_text(word, fused) + " has waited " + seconds_text(now - since) + " on " + rank_text(self) +
                  "; in it: " + ranks_text(there);
  if (!silent_there.empty())
    s += "; in it but silent (stopped, or its host unreachable): " + grouped_activity(silent_there, records, now, silent_after);
  if (!past.empty()) s += "; past it (their part done): " + grouped_activity(past, records, now, silent_after);
  if (!missing.empty())
    s += "; missing: " + grouped_activity(missing, records, now, silent_after);
  else if (silent_there.empty())
    s += "; none is missing: the collective itself is slow or stuck (a link, or a peer's network)";
  return s;
}

//! The line for a tensor allreduce_async has held too long: every rank's oldest tensor in flight.
[[nodiscard]] inline std::string diagnose_tensor(int self, const std::string& tensor, std::int64_t since,
                                                 std::int64_t now, std::int64_t silent_after,
                                                 const std::vector<std::string>& posts) {
  const auto records = decode_all(posts);
  std::vector<int> same, others;
  for (int r = 0; r < static_cast<int>(records.size()); ++r) {
    const auto& rec = records[static_cast<std::size_t>(r)];
    (r == self || (rec && rec->tensor == tensor && now - rec->posted <= silent_after) ? same : others).push_back(r);
  }
  std::string s = "tensor '" + tensor + "' (allreduce_async) was enqueued on " + rank_text(self) + " " +
                  seconds_text(now - since) + " ago and is not reduced yet; it is the oldest in flight on " +
                  ranks_text(same);
  if (!others.empty()) {
    s += "; elsewhere: ";
    bool first = true;
    for (int r : others) {
      const auto& rec = records[static_cast<std::size_t>(r)];
      if (!first) s += "; ";
      first = false;
      s += rank_text(r) + " (" +
           (rec && !rec->tensor.empty() ? "oldest tensor '" + rec->tensor + "' since " + seconds_text(now - rec->tensor_since) + ", "
                                         : std::string(rec ? "no tensor in flight, " : "")) +
           (rec ? describe_activity(*rec, now, silent_after, true) : std::string("no record")) + ")";
    }
  }
  return s;
}

}  // namespace tutti::detail
