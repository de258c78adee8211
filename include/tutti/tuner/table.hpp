//! @file table.hpp  A tuning table in memory: which algorithm (and which tuning values) runs each
//! collective, by size range, element class and the job's layout, with what was measured and where.
//!
//! A table is what `tutti-tune` writes (JSON, tuner/table_json.hpp) and what algorithm::tuned<A...>
//! reads. Its rows are the decisions, one per (collective, dtype class, size range, layout); its
//! samples are the measurements they came from (what lets a layout that was never measured be
//! interpolated, tuner/selection.hpp); `model` is the cost model fitted to those samples (what
//! answers beyond the measured layouts); `made` says where, when and how it was measured.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/core/dtype.hpp"

namespace tutti::tuner {

//! Which elements a row is for: the schedules move bytes alike, but reducing integers and floats
//! costs differently, so a table may choose differently for each.
enum class dtype_class : std::uint8_t { floating, integer };

[[nodiscard]] constexpr dtype_class class_of(dtype t) noexcept {
  switch (t) {
    case dtype::f32:
    case dtype::f64:
    case dtype::f16:
    case dtype::bf16: return dtype_class::floating;
    default: return dtype_class::integer;
  }
}
[[nodiscard]] constexpr std::string_view name_of(dtype_class c) noexcept {
  return c == dtype_class::floating ? "float" : "integer";
}

//! How the job's ranks sit on nodes. ranks_per_node is 0 when nodes hold different numbers.
struct layout {
  int world = 1;
  int nodes = 1;
  int ranks_per_node = 1;
  friend bool operator==(const layout&, const layout&) = default;
};

//! One tuning value by its dotted name, "<struct>.<field>" of tuner/<struct>.hpp
//! (e.g. "direct.one_shot_bytes"; tuner/knobs.hpp lists the names that exist).
struct tuning_value {
  std::string name;
  std::uint64_t value = 0;
  friend bool operator==(const tuning_value&, const tuning_value&) = default;
};

//! What one candidate measured at one point: median and spread of the repeats, and busbw as
//! nccl-tests computes it for the collective.
struct measurement {
  std::string algorithm;
  std::vector<tuning_value> tuning;
  double median_us = 0;
  double spread_us = 0;  //!< interquartile range (p75 - p25) of the repeats' times (tutti-tune)
  double busbw_gbs = 0;
};

//! One decision: for `collective` on elements of `dtypes`, sizes in [min_bytes, max_bytes] (bytes
//! of the collective's count, as collective_descriptor counts them, times the element size), over
//! `where`, run `algorithm` with `tuning`.
struct row {
  collective collective_kind = collective::allreduce;
  dtype_class dtypes = dtype_class::floating;
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max();
  layout where;
  std::string algorithm;  //!< the candidate's `name` (algorithm::hierarchical's: "hierarchical<direct, ring>")
  std::vector<tuning_value> tuning;
  std::optional<measurement> winner;     //!< absent in a hand-written row
  std::optional<measurement> runner_up;  //!< absent when only one candidate was measured
  std::string reason;                    //!< the choosing rule's verdict, for `tutti-tune --explain`
  int line = 0;                          //!< where it was read from (0: made in memory)
};

//! One measured point of a sweep: every candidate at every size is one.
struct sample {
  collective collective_kind = collective::allreduce;
  dtype_class dtypes = dtype_class::floating;
  layout where;
  std::uint64_t bytes = 0;
  measurement measured;
  int line = 0;
};

//! Where and how a table was measured (all strings as the writer found them; empty when unknown).
struct provenance {
  std::vector<std::string> hosts;
  std::string cpu, date, tutti_commit, transport, ucx_version, kernel, command;
  double tune_seconds = 0;  //!< how long the sweep took
  std::string noise_rule;   //!< the rule that chose (tuner/choose.hpp says it in words)
};

//! The cost model's parameters as fitted to the samples (tuner/fit.hpp), stored so that a layout
//! beyond the measured ones can be answered. Seconds and seconds per byte.
struct fitted_model {
  double alpha_intra = 0, beta_intra = 0, alpha_inter = 0, beta_inter = 0, gamma = 0;
  double switch_cost = 0;  //!< seconds per wait on a descheduled peer (oversubscription, tuner/predict.hpp)
  double alpha_sync = 0;   //!< seconds per one-sided synchronisation in a node (direct's epochs; tuner/cost_model.hpp)
  double base_latency = 0; //!< seconds per collective call (tuner/cost_model.hpp)
  double memory_beta = 0;  //!< extra seconds per byte out of cache, and the cache (bytes) it was fitted with
  double cache_bytes = 0;
  bool network_on_cpus = false;  //!< fitted to namespace hosts or simulated nodes (tuner::machine_shape)
  double rms_relative_error = 0, max_relative_error = 0;
  std::size_t samples = 0;
};

//! Whether two rows or samples are for the same (collective, dtype class, layout): one series of a sweep.
template <class A, class B>
[[nodiscard]] bool same_series(const A& a, const B& b) noexcept {
  return a.collective_kind == b.collective_kind && a.dtypes == b.dtypes && a.where == b.where;
}

struct table {
  static constexpr int format_version = 1;
  provenance made;
  std::vector<row> rows;
  std::vector<sample> samples;
  std::optional<fitted_model> model;
  std::string source;  //!< the file it was read from, or "the built-in default table"
};

}  // namespace tutti::tuner
