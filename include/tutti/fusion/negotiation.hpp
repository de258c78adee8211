//! @file negotiation.hpp  How every rank comes to fuse the same tensors in the same order.
//!
//! Each cycle of the engine is one negotiation round: every rank sends rank 0 (the coordinator) a
//! report of the tensors it enqueued since its last report, and rank 0 answers every rank with the
//! same response: which tensors are ready on all ranks, in which batches and order, which failed,
//! whether a blocking collective may run, and the fusion parameters. A tensor name is reported the
//! first time by name with its dtype, count and op; once all ranks have agreed on it, it gets a
//! small id that every rank records in the same order (the response cache), and from then on a
//! report of it is one bit in a bit vector over the ids. A training step's few hundred gradients
//! cost a report of a few dozen bytes. docs/fusion.md walks through the protocol.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tutti/core/dtype.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/op.hpp"

namespace tutti::fusion {

using clock = std::chrono::steady_clock;

//! What a tensor is, as far as agreeing on it goes.
struct tensor_meta {
  dtype type = dtype::f32;
  op reduction = op::sum;
  std::size_t count = 0;
  friend bool operator==(const tensor_meta&, const tensor_meta&) = default;
  [[nodiscard]] std::size_t bytes() const noexcept { return count * size_of(type); }
  [[nodiscard]] std::string describe() const {
    return std::to_string(count) + " " + std::string(name_of(type)) + ", op " + std::string(name_of(reduction));
  }
};

//! The run-time fusion parameters: the same on every rank at every round (rank 0 decides them).
struct parameters {
  std::size_t threshold_bytes = 0;
  std::chrono::microseconds cycle_time{0};
  friend bool operator==(const parameters&, const parameters&) = default;
};

//! A rank's message to the coordinator for one round.
struct report {
  std::vector<std::uint64_t> cached;  //!< bit i: the tensor with id i was enqueued since the last report
  std::vector<std::pair<std::string, tensor_meta>> fresh;  //!< names without an id (or with another meta)
  std::uint64_t blocking_requested = 0;  //!< blocking collectives this rank has entered so far
  bool stopping = false;                 //!< this rank's communicator is being destroyed
  std::uint64_t completed_bytes = 0;     //!< (unused by the coordinator's decisions; kept for logs)
};

//! Why a tensor was not reduced.
enum class failure_kind : std::uint8_t { mismatch, stalled, stopped };

struct failure {
  failure_kind kind = failure_kind::mismatch;
  std::string name, message;
};

struct assignment {
  std::uint32_t id = 0;
  std::string name;
  tensor_meta meta;
};

//! The coordinator's answer for one round, the same bytes for every rank.
struct response {
  std::vector<assignment> assignments;            //!< new ids, in the order every rank records them
  std::vector<std::vector<std::uint32_t>> batches;  //!< ids ready everywhere, one collective per batch
  std::vector<failure> failures;
  std::uint64_t grant_to = 0;  //!< blocking collectives every rank may now run (all have entered them)
  parameters params;
  bool stop = false;           //!< the engines stop after this round
  std::int32_t lost = -1;      //!< >= 0: the coordinator lost this rank; every engine stops with peer_lost
  [[nodiscard]] bool carries_work() const noexcept { return !batches.empty() || !failures.empty() || !assignments.empty(); }
};

// ---- wire format: little-endian fields, length-prefixed strings; every read checked ----------------

class writer {
 public:
  template <class T> void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof v);
  }
  void put(std::string_view s) {
    put(static_cast<std::uint32_t>(s.size()));
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes.insert(bytes.end(), p, p + s.size());
  }
  void put(const tensor_meta& m) {
    put(static_cast<std::uint8_t>(m.type));
    put(static_cast<std::uint8_t>(m.reduction));
    put(static_cast<std::uint64_t>(m.count));
  }
  std::vector<std::byte> bytes;
};

class reader {
 public:
  explicit reader(const std::vector<std::byte>& b) : bytes_(b) {}
  template <class T> T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string get_string() {
    const auto n = get<std::uint32_t>();
    need(n);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return s;
  }
  tensor_meta get_meta() {
    tensor_meta m;
    m.type = static_cast<dtype>(get<std::uint8_t>());
    m.reduction = static_cast<op>(get<std::uint8_t>());
    m.count = static_cast<std::size_t>(get<std::uint64_t>());
    if (!is_valid(m.type) || !is_valid(m.reduction)) throw transport_error("fusion negotiation: a malformed tensor description");
    return m;
  }
  [[nodiscard]] bool done() const noexcept { return at_ == bytes_.size(); }

 private:
  void need(std::size_t n) const {
    if (bytes_.size() - at_ < n) throw transport_error("fusion negotiation: a message ends early (malformed or truncated)");
  }
  const std::vector<std::byte>& bytes_;
  std::size_t at_ = 0;
};

inline std::vector<std::byte> encode(const report& r) {
  writer w;
  w.put(r.blocking_requested);
  w.put(static_cast<std::uint8_t>(r.stopping));
  w.put(static_cast<std::uint32_t>(r.cached.size()));
  for (auto word : r.cached) w.put(word);
  w.put(static_cast<std::uint32_t>(r.fresh.size()));
  for (const auto& [name, meta] : r.fresh) {
    w.put(std::string_view(name));
    w.put(meta);
  }
  return std::move(w.bytes);
}

inline report decode_report(const std::vector<std::byte>& b) {
  reader in(b);
  report r;
  r.blocking_requested = in.get<std::uint64_t>();
  r.stopping = in.get<std::uint8_t>() != 0;
  r.cached.resize(in.get<std::uint32_t>());
  for (auto& word : r.cached) word = in.get<std::uint64_t>();
  const auto n = in.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < n; ++i) {
    auto name = in.get_string();
    r.fresh.emplace_back(std::move(name), in.get_meta());
  }
  if (!in.done()) throw transport_error("fusion negotiation: a report has trailing bytes");
  return r;
}

inline std::vector<std::byte> encode(const response& r) {
  writer w;
  w.put(r.grant_to);
  w.put(static_cast<std::uint8_t>(r.stop));
  w.put(r.lost);
  w.put(static_cast<std::uint64_t>(r.params.threshold_bytes));
  w.put(static_cast<std::int64_t>(r.params.cycle_time.count()));
  w.put(static_cast<std::uint32_t>(r.assignments.size()));
  for (const auto& a : r.assignments) {
    w.put(a.id);
    w.put(std::string_view(a.name));
    w.put(a.meta);
  }
  w.put(static_cast<std::uint32_t>(r.batches.size()));
  for (const auto& b : r.batches) {
    w.put(static_cast<std::uint32_t>(b.size()));
    for (auto id : b) w.put(id);
  }
  w.put(static_cast<std::uint32_t>(r.failures.size()));
  for (const auto& f : r.failures) {
    w.put(static_cast<std::uint8_t>(f.kind));
    w.put(std::string_view(f.name));
    w.put(std::string_view(f.message));
  }
  return std::move(w.bytes);
}

inline response decode_response(const std::vector<std::byte>& b) {
  reader in(b);
  response r;
  r.grant_to = in.get<std::uint64_t>();
  r.stop = in.get<std::uint8_t>() != 0;
  r.lost = in.get<std::int32_t>();
  r.params.threshold_bytes = static_cast<std::size_t>(in.get<std::uint64_t>());
  r.params.cycle_time = std::chrono::microseconds(in.get<std::int64_t>());
  r.assignments.resize(in.get<std::uint32_t>());
  for (auto& a : r.assignments) {
    a.id = in.get<std::uint32_t>();
    a.name = in.get_string();
    a.meta = in.get_meta();
  }
  r.batches.resize(in.get<std::uint32_t>());
  for (auto& batch : r.batches) {
    batch.resize(in.get<std::uint32_t>());
    for (auto& id : batch) id = in.get<std::uint32_t>();
  }
  r.failures.resize(in.get<std::uint32_t>());
  for (auto& f : r.failures) {
    const auto kind = in.get<std::uint8_t>();
    if (kind > static_cast<std::uint8_t>(failure_kind::stopped)) throw transport_error("fusion negotiation: a malformed failure");
    f.kind = static_cast<failure_kind>(kind);
    f.name = in.get_string();
    f.message = in.get_string();
  }
  if (!in.done()) throw transport_error("fusion negotiation: a response has trailing bytes");
  return r;
}

// ---- the response cache: names to ids, identical on every rank ------------------------------------

class tensor_cache {
 public:
  struct entry {
    std::string name;
    tensor_meta meta;
    bool live = false;  //!< false once the name was given a new id (its meta changed)
  };

  //! Records an assignment (every rank applies the same ones in the same order).
  void assign(const assignment& a) {
    if (a.id != entries_.size())
      throw transport_error("fusion negotiation: tensor id " + std::to_string(a.id) + " assigned out of order (expected " +
                            std::to_string(entries_.size()) + ")");
    if (auto it = ids_.find(a.name); it != ids_.end()) entries_[it->second].live = false;
    entries_.push_back({a.name, a.meta, true});
    ids_[a.name] = a.id;
  }
  //! The id of `name` if it has one with exactly this meta.
  [[nodiscard]] std::optional<std::uint32_t> find(const std::string& name, const tensor_meta& meta) const {
    auto it = ids_.find(name);
    if (it == ids_.end() || !(entries_[it->second].meta == meta)) return std::nullopt;
    return it->second;
  }
  [[nodiscard]] const entry& at(std::uint32_t id) const {
    if (id >= entries_.size() || !entries_[id].live)
      throw transport_error("fusion negotiation: unknown tensor id " + std::to_string(id));
    return entries_[id];
  }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] std::size_t live_names() const noexcept { return ids_.size(); }

 private:
  std::vector<entry> entries_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

// ---- the coordinator: rank 0's decisions -----------------------------------------------------------

//! "0-2, 5" for ranks {0, 1, 2, 5}.
inline std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

class coordinator {
 public:
  //! What the coordinator saw of one name this round, for the timeline.
  struct arrival {
    std::string name;
    int rank;
    clock::time_point at;
  };

  coordinator(int world, std::chrono::nanoseconds stall_timeout) : world_(world), stall_(stall_timeout) {}

  //! One round: `reports[r]` is rank r's; `cache` is rank 0's copy of the shared cache (not yet
  //! updated with this round's assignments: every rank applies them from the response).
  response decide(const std::vector<report>& reports, const tensor_cache& cache, const parameters& params,
                  clock::time_point now, std::vector<arrival>* arrivals = nullptr) {
    response out;
    out.params = params;
    out.grant_to = UINT64_MAX;
    std::vector<int> stopping;
    for (int r = 0; r < world_; ++r) {
      const auto& rep = reports[static_cast<std::size_t>(r)];
      out.grant_to = std::min(out.grant_to, rep.blocking_requested);
      if (rep.stopping) stopping.push_back(r);
      for (std::size_t w = 0; w < rep.cached.size(); ++w)
        for (std::uint64_t bits = rep.cached[w]; bits; bits &= bits - 1) {
          const auto id = static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
          const auto& e = cache.at(id);
          arrive(e.name, e.meta, r, now, arrivals);
        }
      for (const auto& [name, meta] : rep.fresh) arrive(name, meta, r, now, arrivals);
    }

    struct ready_name {
      std::string name;
      tensor_meta meta;
      std::uint64_t arrival;
    };
    std::vector<ready_name> ready;
    for (auto it = pending_.begin(); it != pending_.end();) {
      auto& [name, st] = *it;
      // A conflict is judged once every rank has reported the name, so every rank's handle gets it.
      if (st.reported == world_ && st.conflict) {
        out.failures.push_back({failure_kind::mismatch, name, conflict_message(name, st)});
      } else if (st.reported == world_) {
        ready.push_back({name, *st.meta, st.arrival});
      } else if (now - st.first_seen >= stall_ || !stopping.empty()) {
        std::vector<int> have, missing;
        for (int r = 0; r < world_; ++r) (st.by_rank[static_cast<std::size_t>(r)] ? have : missing).push_back(r);
        const auto waited = std::chrono::duration<double>(now - st.first_seen).count();
        char secs[32];
        std::snprintf(secs, sizeof secs, "%.1f", waited);
        if (!stopping.empty())
          out.failures.push_back({failure_kind::stopped, name,
                                  "tensor '" + name + "' was enqueued by rank(s) " + rank_list(have) + " but rank(s) " +
                                      rank_list(stopping) + " stopped their fusion engine (communicator destroyed) first"});
        else
          out.failures.push_back({failure_kind::stalled, name,
                                  "tensor '" + name + "' was enqueued by rank(s) " + rank_list(have) + " but rank(s) " +
                                      rank_list(missing) + " have not enqueued it after " + secs +
                                      " s (TUTTI_STALL_TIMEOUT)"});
      } else {
        ++it;
        continue;
      }
      it = pending_.erase(it);
    }

    // Ids: a ready name keeps its id when its meta is unchanged; new ones are numbered in the order
    // their first report arrived (rank 0's own enqueue order first), so the first step's production
    // order (backward's) becomes the batch order of every later step.
    std::sort(ready.begin(), ready.end(), [](const auto& a, const auto& b) { return a.arrival < b.arrival; });
    std::vector<std::pair<std::uint32_t, tensor_meta>> ids;
    auto next = static_cast<std::uint32_t>(cache.size());
    for (const auto& [name, meta, order] : ready) {
      if (auto id = cache.find(name, meta)) {
        ids.emplace_back(*id, meta);
      } else {
        out.assignments.push_back({next, name, meta});
        ids.emplace_back(next++, meta);
      }
    }
    std::sort(ids.begin(), ids.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out.batches = batch(ids, params.threshold_bytes);
    out.stop = !stopping.empty();
    if (out.stop) pending_.clear();
    return out;
  }

  //! Ids in order, cut into batches of one dtype and op of at most `threshold` bytes (64-byte
  //! aligned, as fusion_buffer lays them out); a tensor larger than the threshold goes alone.
  static std::vector<std::vector<std::uint32_t>> batch(const std::vector<std::pair<std::uint32_t, tensor_meta>>& ids,
                                                      std::size_t threshold) {
    std::vector<std::vector<std::uint32_t>> out;
    struct open_batch {
      dtype type;
      op reduction;
      std::size_t index, bytes;
    };
    std::vector<open_batch> open;
    for (const auto& [id, meta] : ids) {
      const std::size_t bytes = (meta.bytes() + 63) / 64 * 64;
      auto it = std::find_if(open.begin(), open.end(),
                             [&](const open_batch& b) { return b.type == meta.type && b.reduction == meta.reduction; });
      if (it != open.end() && it->bytes + bytes <= threshold) {
        out[it->index].push_back(id);
        it->bytes += bytes;
        continue;
      }
      if (it != open.end()) open.erase(it);
      out.push_back({id});
      if (bytes < threshold) open.push_back({meta.type, meta.reduction, out.size() - 1, bytes});
    }
    return out;
  }

  [[nodiscard]] std::size_t pending() const noexcept { return pending_.size(); }

 private:
  struct name_state {
    std::vector<std::optional<tensor_meta>> by_rank;
    std::optional<tensor_meta> meta;  //!< the first reporter's
    int reported = 0;
    bool conflict = false;
    clock::time_point first_seen;
    std::uint64_t arrival = 0;  //!< order of first report, over the coordinator's life
  };

  void arrive(const std::string& name, const tensor_meta& meta, int rank, clock::time_point now,
              std::vector<arrival>* arrivals) {
    auto [it, fresh] = pending_.try_emplace(name);
    auto& st = it->second;
    if (fresh) {
      st.by_rank.resize(static_cast<std::size_t>(world_));
      st.first_seen = now;
      st.arrival = arrivals_++;
      st.meta = meta;
    }
    auto& slot = st.by_rank[static_cast<std::size_t>(rank)];
    if (slot) return;  // cannot happen: a rank reports a pending name once
    slot = meta;
    ++st.reported;
    if (!(meta == *st.meta)) st.conflict = true;
    if (arrivals) arrivals->push_back({name, rank, now});
  }

  //! "tensor 'w': rank(s) 0, 1 enqueued 100 float32, op sum; rank(s) 2 enqueued 99 float32, op sum"
  std::string conflict_message(const std::string& name, const name_state& st) const {
    std::vector<std::pair<tensor_meta, std::vector<int>>> groups;
    for (int r = 0; r < world_; ++r) {
      const auto& m = st.by_rank[static_cast<std::size_t>(r)];
      if (!m) continue;
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == *m; });
      if (it == groups.end()) groups.push_back({*m, {r}});
      else it->second.push_back(r);
    }
    std::string text = "tensor '" + name + "' is enqueued with different sizes, dtypes or ops: ";
    for (std::size_t i = 0; i < groups.size(); ++i)
      text += (i ? "; rank(s) " : "rank(s) ") + rank_list(groups[i].second) + " enqueued " + groups[i].first.describe();
    return text;
  }

  int world_;
  std::chrono::nanoseconds stall_;
  std::map<std::string, name_state> pending_;
  std::uint64_t arrivals_ = 0;
};

}  // namespace tutti::fusion
