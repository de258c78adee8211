//! @file coordinator.hpp  Rank 0's decisions for one negotiation round: ready names, ids, batches, failures.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tutti/core/dtype.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/op.hpp"
#include "tutti/fusion/negotiation/cache.hpp"
#include "tutti/fusion/negotiation/messages.hpp"

namespace tutti::fusion {

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
    if (out.stop) out.stopped_by = stopping.front();
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
    for (const auto& entry : ids) {
      const auto& [id, meta] = entry;
      const std::size_t bytes = (meta.bytes() + 63) / 64 * 64;
      // By entry, not the binding: clang before 16 cannot capture a structured binding.
      auto it = std::find_if(open.begin(), open.end(), [&](const open_batch& b) {
        return b.type == entry.second.type && b.reduction == entry.second.reduction;
      });
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
