//! @file data_parallel_trainer.hpp  Synchronous data-parallel training with Determined's semantics.
//!
//! Every slot (rank) holds a replica of the model. The chief's initial parameters are broadcast;
//! then for each global batch every slot runs forward and backward on its disjoint share
//! (sharding.hpp), and the gradients go to the communicator's fusion engine **as backward produces
//! them**, in fixed buckets (gradient_buckets.hpp: `allreduce_async_group`, so every step fuses them
//! alike and reruns are bit-identical), so the reduction of the last layers overlaps the backward
//! pass of the first. With aggregation_frequency k, the first k−1 batches of a step
//! only accumulate locally; the k-th adds the accumulation (divided by k when
//! average_aggregated_gradients) before handing each gradient over, so a step sees the mean
//! gradient of k·global records. Then the optimiser steps with the learning rate of the current
//! (fractional) epoch, training metrics are averaged over slots (or the chief's are reported), and
//! validation and checkpoints run on their periods. Timing per step is split into compute,
//! communication exposed after backward, and communication hidden under it.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/tensor_view.hpp"
#include "tutti/fusion/handle.hpp"
#include "tutti/trainer/checkpoint.hpp"
#include "tutti/trainer/checkpoint_name.hpp"
#include "tutti/trainer/concepts.hpp"
#include "tutti/trainer/gradient_buckets.hpp"
#include "tutti/trainer/model.hpp"
#include "tutti/trainer/sharding.hpp"
#include "tutti/trainer/slot_metrics.hpp"

namespace tutti::trainer {

//! How a run is set up; from_config.hpp fills it from an experiment_config.
struct trainer_options {
  //! resources.slots_per_trial: the ranks the configuration expects; the trainer refuses a
  //! communicator of another size (0: whatever size the communicator has).
  std::size_t slots_per_trial = 0;
  std::size_t global_batch_size = 0;
  std::size_t aggregation_frequency = 1;
  bool average_aggregated_gradients = true;
  bool average_training_metrics = true;
  std::size_t max_batches = 0;           //!< searcher.max_length, in global batches
  std::size_t validation_period = 0;     //!< in global batches; 0: validate at the end only
  std::size_t checkpoint_period = 0;     //!< in global batches; 0: no checkpoints
  std::filesystem::path checkpoint_dir;  //!< where checkpoints go and are resumed from
  std::size_t checkpoints_kept = 2;
  std::uint64_t seed = 1;                //!< the data order's seed
  std::function<double(double epoch)> learning_rate = [](double) { return 0.1; };
  //! Notable events in words (a resume, a checkpoint skipped as corrupt), on every slot; by default
  //! logged at info (TUTTI_LOG=info).
  std::function<void(const std::string&)> announce;
};

//! What a slot reports after each optimiser step.
struct step_report {
  std::size_t batches = 0;  //!< global batches done
  double epoch = 0;         //!< fractional epochs done
  double learning_rate = 0;
  metrics training;         //!< averaged over slots, or the chief's
  double step_seconds = 0, compute_seconds = 0, exposed_seconds = 0, overlapped_seconds = 0, optimizer_seconds = 0;
  std::size_t records = 0;  //!< records trained on in this step, over all slots
};

struct validation_report {
  std::size_t batches = 0;
  double epoch = 0;
  metrics validation;  //!< over the whole validation set, every slot's share
};

//! The trainer's view for user code (Determined's context): batch sizes and who we are.
struct trainer_context {
  batch_plan plan;
  int rank = 0;
  [[nodiscard]] std::size_t get_per_slot_batch_size() const noexcept { return plan.per_slot; }
  [[nodiscard]] std::size_t get_global_batch_size() const noexcept { return plan.global; }
  [[nodiscard]] bool is_chief() const noexcept { return rank == 0; }
};

//! Communicator: a trainer_communicator (tutti::communicator is one); Optimizer: a
//! trainer_optimizer (concepts.hpp). Either refused with one sentence naming what it lacks.
template <class Communicator, class Model, class Optimizer>
  requires model<Model>
class data_parallel_trainer {
  static_assert(concepts_detail::check_communicator<Communicator>());
  static_assert(concepts_detail::check_optimizer<Optimizer>());

 public:
  using batch_type = typename Model::batch_type;

  data_parallel_trainer(Communicator& comm, Model& model, Optimizer& optimizer, trainer_options options)
      : comm_(comm),
        model_(model),
        optimizer_(optimizer),
        options_(std::move(options)),
        params_(model.parameters()),
        context_{plan_for(options_, comm), comm.rank()},
        buckets_(gradient_counts(params_)) {
    if (options_.aggregation_frequency == 0) throw invalid_argument("optimizations.aggregation_frequency must be at least 1");
    if (options_.max_batches == 0) throw invalid_argument("searcher.max_length must be at least one batch");
    accumulated_.resize(params_.size());
    handles_.resize(params_.size());
    for (const auto& p : params_)
      if (p.value.size() != p.grad.size())
        throw invalid_argument("parameter '" + p.name + "' has " + std::to_string(p.value.size()) + " values but " +
                               std::to_string(p.grad.size()) + " gradients");
  }

  //! A step that failed left gradients in the fusion engine's hands (fusion::wait_all rethrows
  //! once all are done, but a step can also fail before it waits): the engine writes them and calls
  //! back into this trainer until each handle completes, which it always does, by its deadlines at
  //! the latest (fusion/handle.hpp). Wait for them, so that nothing the engine holds (this trainer,
  //! the model's gradients) is destroyed under it.
  ~data_parallel_trainer() {
    try {
      fusion::wait_all(handles_);
    } catch (...) {  // the step's error was thrown already; this one adds nothing
    }
  }
  data_parallel_trainer(const data_parallel_trainer&) = delete;
  data_parallel_trainer& operator=(const data_parallel_trainer&) = delete;

  [[nodiscard]] const trainer_context& context() const noexcept { return context_; }

  //! Trains from the last valid checkpoint (or from the chief's initial parameters) up to
  //! max_batches. `on_step` and `on_validation` run on every slot after each step / validation.
  template <class Train, class Validation>
    requires dataset<Train, batch_type> && dataset<Validation, batch_type>
  void fit(const Train& train, const Validation& validation, const std::function<void(const step_report&)>& on_step = {},
           const std::function<void(const validation_report&)>& on_validation = {}) {
    shard_sampler sampler(train.size(), context_.plan, options_.seed);
    const auto per_epoch = static_cast<double>(sampler.batches_per_epoch());
    std::size_t batch = resume();
    if (batch == 0) broadcast_initial_parameters();
    const std::size_t k = options_.aggregation_frequency;
    const auto slot = static_cast<std::size_t>(comm_.rank());
    using clock = std::chrono::steady_clock;

    while (batch < options_.max_batches) {
      step_report report;
      const auto step_start = clock::now();
      metrics summed;
      std::size_t batches_in_step = 0;
      first_enqueue_ = clock::time_point::max();
      last_completion_.store(0);
      buckets_.new_step(fusion_threshold());
      for (;;) {
        const bool last = (batch + 1) % k == 0 || batch + 1 == options_.max_batches;
        const auto indices = sampler.indices(batch, slot);
        const batch_type b = train.batch(indices);
        const auto t0 = clock::now();
        const metrics m = model_.forward_backward(b, [&](std::size_t i) { gradient_ready(i, last, batches_in_step); });
        report.compute_seconds += seconds(clock::now() - t0);
        for (const auto& [name, value] : m) summed[name] += value;
        ++batches_in_step;
        ++batch;
        if (last) break;
      }
      buckets_.backward_done([this](const auto& members) { enqueue(members); });
      const auto backward_done = clock::now();
      fusion::wait_all(handles_);  // every gradient done before a failure is rethrown
      const auto reduced = clock::now();
      report.exposed_seconds = seconds(reduced - backward_done);
      const auto done_ns = last_completion_.load();
      if (first_enqueue_ != clock::time_point::max() && done_ns > 0) {
        const auto span = seconds(clock::time_point(clock::duration(done_ns)) - first_enqueue_);
        report.overlapped_seconds = std::max(0.0, span - report.exposed_seconds);
      }
      report.epoch = static_cast<double>(batch) / per_epoch;
      report.learning_rate = options_.learning_rate(static_cast<double>(batch - batches_in_step) / per_epoch);
      const auto t_opt = clock::now();
      optimizer_.step(std::span<const parameter>(params_), report.learning_rate);
      report.optimizer_seconds = seconds(clock::now() - t_opt);
      for (auto& [name, value] : summed) value /= static_cast<double>(batches_in_step);
      report.training = options_.average_training_metrics ? average_over_slots(comm_, summed) : summed;
      report.batches = batch;
      report.records = batches_in_step * context_.plan.trained();
      report.step_seconds = seconds(clock::now() - step_start);
      if (on_step) on_step(report);
      const bool end = batch == options_.max_batches;
      if ((options_.validation_period && batch % options_.validation_period < batches_in_step) || end) {
        validation_report v{batch, report.epoch, validate(validation)};
        if (on_validation) on_validation(v);
      }
      if (options_.checkpoint_period && (batch % options_.checkpoint_period < batches_in_step || end)) save(batch);
    }
  }

  //! Evaluates the whole dataset: each slot its contiguous share, in batches of the per-slot size;
  //! metrics weighted by records and summed over slots, so the result is the dataset's mean.
  template <class Data>
  metrics validate(const Data& data) {
    const std::size_t n = data.size(), slots = context_.plan.slots, slot = static_cast<std::size_t>(comm_.rank());
    const std::size_t begin = n * slot / slots, end = n * (slot + 1) / slots, step = std::max<std::size_t>(1, context_.plan.per_slot);
    metrics sums;
    std::vector<std::size_t> indices;
    for (std::size_t first = begin; first < end; first += step) {
      indices.clear();
      for (std::size_t i = first; i < std::min(end, first + step); ++i) indices.push_back(i);
      const auto m = model_.evaluate(data.batch(indices));
      for (const auto& [name, value] : m) sums[name] += value * static_cast<double>(indices.size());
    }
    std::vector<double> packed;
    for (const auto& [name, value] : sums) packed.push_back(value);
    packed.push_back(static_cast<double>(end - begin));
    check_metric_names(comm_, sums, "validation");
    packed = sum_over_slots(comm_, packed);
    metrics out;
    std::size_t i = 0;
    for (const auto& [name, value] : sums) out[name] = packed[i++] / packed.back();
    return out;
  }

 private:
  //! The batch plan for the ranks that started, refused (on every rank alike, before any data
  //! moves) when they are not the slots the configuration asked for: the shares would silently be
  //! global ÷ ranks, not the global ÷ slots the configuration's own warning computed.
  //! Across hosts, Determined's machine rule too: a configured slots_per_trial must be a multiple of
  //! the slots per machine, so every host runs the same number of ranks (the transport's node map,
  //! which every rank has alike).
  static batch_plan plan_for(const trainer_options& o, Communicator& comm) {
    const auto ranks = static_cast<std::size_t>(comm.size());
    if (o.slots_per_trial != 0 && o.slots_per_trial != ranks)
      throw invalid_argument(on_rank(comm.rank(), "data_parallel_trainer") + "resources.slots_per_trial is " +
                             std::to_string(o.slots_per_trial) + " but the job has " + std::to_string(ranks) +
                             " ranks: start it with tutti-run -n " + std::to_string(o.slots_per_trial) +
                             ", or set slots_per_trial to " + std::to_string(ranks));
    if constexpr (requires { comm.transport().nodes().describe(); }) {
      const auto& nodes = comm.transport().nodes();
      if (o.slots_per_trial != 0 && !nodes.even())
        throw invalid_argument(on_rank(comm.rank(), "data_parallel_trainer") + "resources.slots_per_trial " +
                               std::to_string(ranks) + " is not a multiple of the slots per machine: the job's " +
                               std::to_string(nodes.nodes()) + " hosts hold different numbers of slots (" +
                               nodes.describe() + "); start the same number of ranks on every host");
    }
    return batch_plan::make(o.global_batch_size, ranks);
  }

  static double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

  //! Called by backward as parameter i's gradient becomes final.
  void gradient_ready(std::size_t i, bool last, std::size_t batches_before) {
    auto& p = params_[i];
    auto& acc = accumulated_[i];
    if (!last) {
      if (batches_before == 0) acc.assign(p.grad.begin(), p.grad.end());
      else
        for (std::size_t j = 0; j < acc.size(); ++j) acc[j] += p.grad[j];
      return;
    }
    if (batches_before > 0) {
      // The mean over the step's batches: what one batch of k·global records would give.
      const float scale = options_.average_aggregated_gradients ? 1.0f / static_cast<float>(batches_before + 1) : 1.0f;
      for (std::size_t j = 0; j < acc.size(); ++j) p.grad[j] = (p.grad[j] + acc[j]) * scale;
    }
    buckets_.ready(i, [this](const auto& members) { enqueue(members); });
  }

  //! One bucket of gradients to the fusion engine, as one group where the communicator has groups
  //! (gradient_buckets.hpp says why the grouping must be fixed).
  void enqueue(const std::vector<std::size_t>& members) {
    if (first_enqueue_ == std::chrono::steady_clock::time_point::max()) first_enqueue_ = std::chrono::steady_clock::now();
    const fusion::completion::callback done = [this](std::exception_ptr) {
      const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
      auto seen = last_completion_.load();
      while (seen < now && !last_completion_.compare_exchange_weak(seen, now)) {
      }
    };
    const auto view = [this](std::size_t i) { return tensor_view(std::span<float>(params_[i].grad)); };
    if constexpr (requires { comm_.allreduce_async_group(std::vector<fusion::tensor_request>{}, op::avg, done); }) {
      std::vector<fusion::tensor_request> group;
      for (auto i : members) group.push_back({params_[i].name, const_tensor_view(view(i)), view(i)});
      auto handles = comm_.allreduce_async_group(std::move(group), op::avg, done);
      for (std::size_t j = 0; j < members.size(); ++j) handles_[members[j]] = std::move(handles[j]);
    } else {
      for (auto i : members) handles_[i] = comm_.allreduce_async(params_[i].name, view(i), op::avg, done);
    }
  }

  //! The fusion threshold in force (the engine's; 0, every tensor alone, for a communicator without one).
  std::size_t fusion_threshold() const {
    if constexpr (requires { comm_.fusion_parameters().threshold_bytes; }) return comm_.fusion_parameters().threshold_bytes;
    else return 0;
  }
  static std::vector<std::size_t> gradient_counts(const std::vector<parameter>& params) {
    std::vector<std::size_t> counts;
    for (const auto& p : params) counts.push_back(p.grad.size());
    return counts;
  }

  void broadcast_initial_parameters() {
    for (auto& p : params_) comm_.broadcast(tensor_view(std::span<float>(p.value)), 0);
  }

  static constexpr bool has_feedback = concepts_detail::feedback_codec_of<Communicator>();
  //! Each error-feedback residual is the checkpoint section "residual/<tensor name>".
  static constexpr std::string_view residual_section = "residual/";

  //! With an error-feedback codec each rank's residuals beside the checkpoint of `batches`.
  [[nodiscard]] std::filesystem::path residuals_path(std::size_t batches) const {
    return feedback_path(options_.checkpoint_dir, batches, comm_.rank());
  }

  //! Parameters and optimiser state, with the position in the data; the chief writes, then all
  //! wait. With an error-feedback codec every rank first writes its residuals, so a checkpoint
  //! never exists without them.
  void save(std::size_t batches) {
    if constexpr (has_feedback) {
      checkpoint_writer f;
      for (const auto& [name, residual] : comm_.fusion_feedback_state())
        f.add(std::string(residual_section) + name,
              std::span<const std::byte>(reinterpret_cast<const std::byte*>(residual.data()), residual.size() * sizeof(float)));
      std::filesystem::create_directories(options_.checkpoint_dir);
      f.commit(residuals_path(batches));
      comm_.barrier();
    }
    if (comm_.rank() == 0) {
      checkpoint_writer w;
      std::string meta = std::to_string(batches) + " " + std::to_string(options_.seed) + " " +
                         std::to_string(context_.plan.global) + " " + std::to_string(context_.plan.slots) + " " +
                         std::to_string(options_.aggregation_frequency);
      w.add("meta", meta);
      for (const auto& p : params_)
        w.add("param/" + p.name, std::span<const std::byte>(reinterpret_cast<const std::byte*>(p.value.data()),
                                                           p.value.size_bytes()));
      std::ostringstream opt;
      optimizer_.save(opt);
      w.add("optimizer", opt.str());
      std::filesystem::create_directories(options_.checkpoint_dir);
      w.commit(checkpoint_path(options_.checkpoint_dir, batches));
      prune_checkpoints(options_.checkpoint_dir, options_.checkpoints_kept);
    }
    comm_.barrier();
    if constexpr (has_feedback) prune_feedback();
  }

  //! Residual files whose checkpoint is gone go too (each rank its own).
  void prune_feedback() {
    const auto kept = detail::list_checkpoints(options_.checkpoint_dir);
    for (const auto& [batches, path] : detail::list_feedback(options_.checkpoint_dir, comm_.rank()))
      if (std::none_of(kept.begin(), kept.end(), [b = batches](const auto& k) { return k.first == b; }))
        std::filesystem::remove(path);
  }

  //! Loads the newest valid checkpoint (every slot reads the same file) and returns the batches it
  //! had done; 0 when there is none. Corrupt newer files are reported and skipped.
  std::size_t resume() {
    if (options_.checkpoint_dir.empty() || !std::filesystem::exists(options_.checkpoint_dir)) return 0;
    auto choice = latest_checkpoint(options_.checkpoint_dir);
    if (!choice) return 0;
    for (const auto& why : choice->refused) say("skipping a checkpoint: " + why);
    auto r = checkpoint_reader::open(choice->path);
    const auto meta_bytes = r.section("meta");
    std::istringstream meta(std::string(reinterpret_cast<const char*>(meta_bytes.data()), meta_bytes.size()));
    std::size_t batches = 0, global = 0, slots = 0, aggregation = 0;
    std::uint64_t seed = 0;
    meta >> batches >> seed >> global >> slots >> aggregation;
    if (seed != options_.seed || global != context_.plan.global || aggregation != options_.aggregation_frequency)
      throw invalid_argument("checkpoint " + choice->path.string() + " was written with seed " + std::to_string(seed) +
                             ", global batch " + std::to_string(global) + ", aggregation " + std::to_string(aggregation) +
                             "; this run has " + std::to_string(options_.seed) + ", " +
                             std::to_string(context_.plan.global) + ", " + std::to_string(options_.aggregation_frequency));
    for (auto& p : params_) {
      const auto bytes = r.section("param/" + p.name);
      if (bytes.size() != p.value.size_bytes())
        throw invalid_argument("checkpoint " + choice->path.string() + ": parameter '" + p.name + "' has " +
                               std::to_string(bytes.size()) + " bytes, the model " + std::to_string(p.value.size_bytes()));
      std::memcpy(p.value.data(), bytes.data(), bytes.size());
    }
    const auto opt = r.section("optimizer");
    std::istringstream in(std::string(reinterpret_cast<const char*>(opt.data()), opt.size()));
    optimizer_.load(in);
    if constexpr (has_feedback) {
      const auto path = residuals_path(batches);
      if (!std::filesystem::exists(path))
        throw invalid_argument("checkpoint " + choice->path.string() + " needs this rank's error-feedback residuals, " +
                               path.string() + ", which is missing (a run with a feedback codec cannot resume exactly without it)");
      auto f = checkpoint_reader::open(path);
      std::map<std::string, std::vector<float>> state;
      for (const auto& name : f.names()) {
        const auto bytes = f.section(name);
        auto& v = state[name.substr(residual_section.size())];
        v.resize(bytes.size() / sizeof(float));
        std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
      }
      comm_.restore_fusion_feedback(std::move(state));
    }
    say("resumed from " + choice->path.string() + " (" + std::to_string(batches) + " batches done)");
    return batches;
  }

  void say(const std::string& what) const {
    if (options_.announce) options_.announce(what);
    else log(log_level::info, comm_.rank(), "data_parallel_trainer: " + what);
  }

  Communicator& comm_;
  Model& model_;
  Optimizer& optimizer_;
  trainer_options options_;
  std::vector<parameter> params_;
  trainer_context context_;
  gradient_buckets buckets_;  //!< after params_
  std::vector<std::vector<float>> accumulated_;
  std::vector<fusion::handle> handles_;
  std::chrono::steady_clock::time_point first_enqueue_{};
  std::atomic<std::chrono::steady_clock::rep> last_completion_{0};
};

}  // namespace tutti::trainer
