//! @file contenders.hpp  What tutti-tune measures for one collective: each candidate of tuned<...>
//! that has it, with its default tuning values, plus knob variants where they change what runs.
//!
//! A knob is a threshold (tuner/knobs.hpp): below or above it the algorithm runs one of two
//! schedules. Rather than trying five threshold values that mostly run the same schedule as the
//! default (a measurement that differs only by noise, which the choosing rule would then have to
//! reject), each knob gets its two extremes, "the other schedule everywhere": 0 and `always`.
//! A variant is measured only at the sizes where it runs a different schedule than the default;
//! the rows then put the threshold where the measurements say, at the range boundaries.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/tuner/direct.hpp"
#include "tutti/tuner/halving_doubling.hpp"
#include "tutti/tuner/knobs.hpp"
#include "tutti/tuner/overrides.hpp"
#include "tutti/tuner/selection.hpp"
#include "tutti/tuner/table.hpp"

namespace tune {

//! How a threshold knob picks its schedule at `bytes` (the described bytes of the collective).
enum class threshold_rule : std::uint8_t {
  up_to,    //!< the first schedule while bytes <= value (direct.one_shot_bytes, tree_reduce, bruck)
  below,    //!< the first schedule while bytes < value (halving_doubling.scatter_broadcast_bytes)
};

//! One knob of one algorithm for one collective.
struct knob_use {
  std::string_view algorithm;
  tutti::collective collective;
  std::string_view knob;  //!< "direct.one_shot_bytes"
  std::uint64_t default_value;
  threshold_rule rule;
  int min_world;  //!< below this world size the knob changes nothing (halving_doubling: 3)
  bool capped_by_stage = false;  //!< above the transport's stage the first schedule never runs (direct)
};

//! Every knob tutti's algorithms have (tuner/direct.hpp, tuner/halving_doubling.hpp), the
//! collective it acts on and how. A new knob is one line here.
inline const std::vector<knob_use>& knob_uses() {
  using tutti::collective;
  namespace tn = tutti::tuner;
  static const std::vector<knob_use> uses = {
      {"direct", collective::allreduce, "direct.one_shot_bytes", tn::defaults<tn::direct_tuning>.one_shot_bytes,
       threshold_rule::up_to, 2, true},
      {"halving_doubling", collective::broadcast, "halving_doubling.scatter_broadcast_bytes",
       tn::defaults<tn::halving_doubling_tuning>.scatter_broadcast_bytes, threshold_rule::below, 3},
      {"halving_doubling", collective::reduce, "halving_doubling.tree_reduce_bytes",
       tn::defaults<tn::halving_doubling_tuning>.tree_reduce_bytes, threshold_rule::up_to, 2},
      {"halving_doubling", collective::alltoall, "halving_doubling.bruck_block_bytes",
       tn::defaults<tn::halving_doubling_tuning>.bruck_block_bytes, threshold_rule::up_to, 3},
  };
  return uses;
}

//! Whether the first schedule runs at `bytes` with threshold `value`.
[[nodiscard]] inline bool first_schedule(threshold_rule rule, std::uint64_t bytes, std::uint64_t value) {
  return rule == threshold_rule::up_to ? bytes <= value : bytes < value;
}

//! The contender that is no candidate but the table's choice (tutti-tune --versus): released, not forced.
inline constexpr std::uint32_t table_choice = ~std::uint32_t{0};

//! One thing measured: candidate `candidate` of tuned<...> with `tuning` (empty: its defaults), or
//! (`table_choice`) whatever the table chooses.
struct contender {
  std::uint32_t candidate = 0;
  std::string algorithm;
  std::vector<tutti::tuner::tuning_value> tuning;
  std::shared_ptr<const tutti::tuner::overrides> made;  //!< what control().force() gets; null for defaults
  const knob_use* knob = nullptr;                       //!< the variant's knob; null for defaults
  std::uint64_t stage_bytes = ~std::uint64_t{0};        //!< the transport's stage, for capped knobs

  //! Whether this is measured at `bytes`: defaults always; a variant where its schedule differs.
  [[nodiscard]] bool measured_at(std::uint64_t bytes) const {
    if (!knob) return true;
    if (knob->capped_by_stage && bytes > stage_bytes) return false;  // both run the second schedule
    return first_schedule(knob->rule, bytes, tuning.front().value) !=
           first_schedule(knob->rule, bytes, knob->default_value);
  }
  //! "direct" or "direct {direct.one_shot_bytes: 0}", for the progress line.
  [[nodiscard]] std::string label() const {
    std::string s = algorithm;
    for (const auto& v : tuning) s += " {" + v.name + ": " + std::to_string(v.value) + "}";
    return s;
  }
};

//! What tutti-tune measures for collective `c` over `world` ranks: the candidates that have it, in
//! tuned<...>'s order, then (with `variants`) each of their knobs at 0 and at `always` (a value
//! above every size measured). `stage_bytes`: the transport's stage (shm_options), if it has one.
[[nodiscard]] inline std::vector<contender> contenders_for(std::span<const tutti::tuner::candidate_info> candidates,
                                                           tutti::collective c, int world, bool variants,
                                                           std::uint64_t always, std::uint64_t stage_bytes) {
  std::vector<contender> list;
  for (std::uint32_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].has[static_cast<std::size_t>(c)]) list.push_back({i, std::string(candidates[i].name), {}, {}, nullptr, stage_bytes});
  if (!variants) return list;
  const std::size_t plain = list.size();
  for (std::size_t k = 0; k < plain; ++k)
    for (const auto& use : knob_uses()) {
      if (use.algorithm != list[k].algorithm || use.collective != c || world < use.min_world) continue;
      for (std::uint64_t value : {std::uint64_t{0}, always}) {
        contender v{list[k].candidate, list[k].algorithm, {{std::string(use.knob), value}}, {}, &use, stage_bytes};
        v.made = std::make_shared<const tutti::tuner::overrides>(tutti::tuner::make_overrides(v.tuning, "tutti-tune: "));
        list.push_back(std::move(v));
      }
    }
  return list;
}

}  // namespace tune
