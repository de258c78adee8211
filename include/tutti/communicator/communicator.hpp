//! @file communicator.hpp  tutti::communicator<Policies...>: the composition point, its collectives one checked call.
//!
//! Every collective goes one way (call<C>): describe it from its row of core/collective_traits.hpp,
//! check this rank's arguments (arguments.hpp), agree with every rank unless TUTTI_CHECK=0
//! (agreement.hpp), then run the algorithm under one deadline; a collective the Algorithm lacks is
//! one compile-time sentence (collective_refusal.hpp). The public collectives are thin overloads.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tutti/algorithm/concepts.hpp"
#include "tutti/algorithm/context.hpp"
#include "tutti/algorithm/node_map.hpp"
#include "tutti/algorithm/phases.hpp"
#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/codec/concepts.hpp"
#include "tutti/codec/error_feedback.hpp"
#include "tutti/communicator/agreement.hpp"
#include "tutti/communicator/arguments.hpp"
#include "tutti/communicator/collective_refusal.hpp"
#include "tutti/communicator/first_failure.hpp"
#include "tutti/communicator/first_loss.hpp"
#include "tutti/communicator/fusion_port.hpp"
#include "tutti/communicator/logging.hpp"
#include "tutti/communicator/options.hpp"
#include "tutti/communicator/point_to_point.hpp"
#include "tutti/communicator/policies.hpp"
#include "tutti/communicator/stall_inspector.hpp"
#include "tutti/core/collective.hpp"
#include "tutti/core/collective_traits.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/tags.hpp"
#include "tutti/core/tensor_view.hpp"
#include "tutti/fusion/engine.hpp"
#include "tutti/fusion/handle.hpp"
#include "tutti/fusion/start.hpp"
#include "tutti/fusion/timeline.hpp"

namespace tutti {

template <class... Policies>
class communicator {
  using policies = detail::sorted_policies<Policies...>;

 public:
  using transport_type = typename policies::transport;
  using algorithm_type = typename policies::algorithm;
  using codec_type = typename policies::codec;
  using fusion_type = typename policies::fusion;
  using context_type = algorithm::context<transport_type, codec_type>;

  // ---- construction ------------------------------------------------------------------------------
  //! Uses a transport that the caller owns and keeps alive longer than the communicator.
  explicit communicator(transport_type& transport, communicator_options options = communicator_options::from_env())
      : transport_(&transport), options_(options) {
    start("made by the caller");
  }
  //! Owns its transport.
  explicit communicator(std::unique_ptr<transport_type> transport,
                        communicator_options options = communicator_options::from_env())
      : communicator(std::move(transport), options, "made by the caller") {}

  //! Builds the transport from the launcher's environment (tutti-run, mpirun, srun, torchrun),
  //! for transports that can (`Transport::from_env()`), e.g. transport::shm. A process that no
  //! launcher started runs alone (rank 0 of 1), and says so in a warning.
  [[nodiscard]] static communicator from_env(communicator_options options = communicator_options::from_env())
    requires requires { transport_type::from_env(); }
  {
    const auto info = rank_info_from_env();
    if (info.launcher == "none")
      log(log_level::warn, 0,
          "no launcher's variables found (TUTTI_RANK, RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID): this "
          "process runs alone, as rank 0 of 1; start it with tutti-run -n N, mpirun, srun or torchrun");
    return communicator(transport_type::from_env(), options,
                        "launcher " + info.launcher + ", job " + (info.job_id.empty() ? "-" : info.job_id));
  }

  communicator(communicator&&) = default;
  communicator& operator=(communicator&&) = default;
  //! Stops the stall inspector's watchdog first: it reads the fusion engine, which goes next.
  ~communicator() {
    if (inspector_) inspector_->stop();
  }

  [[nodiscard]] int rank() const noexcept { return transport_->rank(); }
  [[nodiscard]] int size() const noexcept { return transport_->world_size(); }
  [[nodiscard]] const communicator_options& options() const noexcept { return options_; }
  [[nodiscard]] transport_type& transport() noexcept { return *transport_; }

  // ---- allreduce: out[i] = op over ranks of in[i] ----------------------------------------------
  //! With a codec that needs error feedback (topk, onebit), use the overloads taking a
  //! tutti::error_feedback: one per tensor, passed again at every step.
  void allreduce(const_tensor_view in, tensor_view out, op o) {
    static_assert(sizeof(detail::check_feedback<codec_type, false>) > 0);
    allreduce_checked(in, out, o, nullptr);
  }
  void allreduce(tensor_view inout, op o) { allreduce(const_tensor_view(inout), inout, o); }
  template <std::ranges::contiguous_range R>
  void allreduce(R&& inout, op o) {
    static_assert(sizeof(detail::check_codec_element<codec_type, std::ranges::range_value_t<R>>) > 0);
    allreduce(view_of(inout), o);
  }
  template <std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  void allreduce(const In& in, Out&& out, op o) {
    static_assert(sizeof(detail::check_codec_element<codec_type, std::ranges::range_value_t<In>>) > 0);
    allreduce(const_view_of(in), view_of(out), o);
  }
  //! allreduce with error feedback: `feedback` holds what this rank's codec has not sent yet for
  //! this tensor; it is added before encoding and updated after (codec/error_feedback.hpp).
  void allreduce(const_tensor_view in, tensor_view out, op o, error_feedback& feedback) {
    static_assert(sizeof(detail::check_feedback<codec_type, true>) > 0);
    allreduce_checked(in, out, o, &feedback);
  }
  void allreduce(tensor_view inout, op o, error_feedback& feedback) {
    allreduce(const_tensor_view(inout), inout, o, feedback);
  }
  template <std::ranges::contiguous_range R>
  void allreduce(R&& inout, op o, error_feedback& feedback) {
    static_assert(sizeof(detail::check_codec_element<codec_type, std::ranges::range_value_t<R>>) > 0);
    allreduce(view_of(inout), o, feedback);
  }
  template <std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  void allreduce(const In& in, Out&& out, op o, error_feedback& feedback) {
    static_assert(sizeof(detail::check_codec_element<codec_type, std::ranges::range_value_t<In>>) > 0);
    allreduce(const_view_of(in), view_of(out), o, feedback);
  }

  // ---- allreduce_async: the fusion engine (fusion/engine.hpp) ----------------------------------------
  //! Queues `name`'s tensor for an allreduce and returns at once; the handle completes when every
  //! rank's copy is reduced (read `out`, or reuse the buffers, only after wait()). Every rank enqueues
  //! the same names, counts, dtypes and ops, in any order and at any time; the engine fuses those ready
  //! everywhere by the FusionStrategy. A name some ranks never enqueue fails after TUTTI_STALL_TIMEOUT
  //! (tutti::timeout naming them); different counts, dtypes or ops with tutti::mismatch. The first
  //! call starts the engine on every rank (start_fusion_engine()).
  fusion::handle allreduce_async(std::string name, const_tensor_view in, tensor_view out, op o,
                                 fusion::completion::callback done = {}) {
    check_async(name, in, out, o);
    start_fusion_engine();
    return engine_.engine->enqueue(std::move(name), in, out, o, std::move(done));
  }
  fusion::handle allreduce_async(std::string name, tensor_view inout, op o, fusion::completion::callback done = {}) {
    return allreduce_async(std::move(name), const_tensor_view(inout), inout, o, std::move(done));
  }
  template <std::ranges::contiguous_range R>
  fusion::handle allreduce_async(std::string name, R&& inout, op o, fusion::completion::callback done = {}) {
    static_assert(sizeof(detail::check_codec_element<codec_type, std::ranges::range_value_t<R>>) > 0);
    return allreduce_async(std::move(name), view_of(inout), o, std::move(done));
  }
  //! Tensors queued together (Horovod's grouped_allreduce): each rank's copies become ready in one
  //! round and are batched in this order, so a fixed grouping reduces to the same bits whatever the
  //! timing (trainer/gradient_buckets.hpp). A refused tensor refuses the group; `done` runs per tensor.
  std::vector<fusion::handle> allreduce_async_group(std::vector<fusion::tensor_request> group, op o,
                                                   const fusion::completion::callback& done = {}) {
    for (const auto& t : group) check_async(t.name, t.in, t.out, o);
    if (group.empty()) return {};
    start_fusion_engine();
    return engine_.engine->enqueue_group(group, o, done);
  }

  //! Starts the fusion engine now (allreduce_async does on its first call). Collective: every rank
  //! calls it, at the same point among its blocking collectives, and the ranks' TUTTI_FUSION_THRESHOLD,
  //! TUTTI_CYCLE_TIME and TUTTI_AUTOTUNE must agree (tutti::mismatch naming the variable otherwise).
  void start_fusion_engine() {
    static_assert(!transport_type::traits.device_memory,
                  "tutti::communicator<...>::allreduce_async: the fusion engine packs tensors in host memory, so it "
                  "does not run over a device-memory transport (transport::nccl); call allreduce per tensor");
    if (engine_.engine) return;
    if (!broken_.empty()) broken_.refuse(on_rank(rank()) + "allreduce_async: ");
    const auto settings = fusion::settings_from_env<fusion_type>(options_.stall_timeout, options_.timeout,
                                                                 !transport_type::traits.intra_node);
    // A barrier (every algorithm has one, and its descriptor check says so if ranks are in other
    // collectives), then the settings straight over the transport with the engine's own tag.
    barrier();
    engine_.engine = fusion::start<engine_type, fusion_type>(fusion_port(*this), settings, codec_type::name,
                                                             algorithm_type::name,
                                                             fusion::timeline::from_env(rank(), size()));
    if (!restored_feedback_.empty()) engine_.engine->restore_feedback(std::exchange(restored_feedback_, {}));
    if (inspector_) inspector_->watch_tensors([e = engine_.engine.get()] { return e->oldest_in_flight(); });
  }

  //! The fusion parameters in force (the autotuner's latest choice); the strategy's before the engine starts.
  [[nodiscard]] fusion::parameters fusion_parameters() const {
    if (engine_.engine) return engine_.engine->current_parameters();
    return fusion::settings_from_env<fusion_type>(options_.stall_timeout, options_.timeout).initial;
  }
  //! With an error-feedback codec (topk, onebit), allreduce_async keeps one residual per tensor name
  //! on each rank: this rank's, for a checkpoint (call it when no tensor is pending); restored after
  //! a restart (before or after the engine starts).
  [[nodiscard]] std::map<std::string, std::vector<float>> fusion_feedback_state() const {
    return engine_.engine ? engine_.engine->feedback_state() : restored_feedback_;
  }
  void restore_fusion_feedback(std::map<std::string, std::vector<float>> state) {
    if (engine_.engine) engine_.engine->restore_feedback(state);
    else restored_feedback_ = std::move(state);
  }
  //! Negotiation rounds the engine has run (0 before it starts): for tests and diagnostics.
  [[nodiscard]] std::uint64_t fusion_rounds() const noexcept { return engine_.engine ? engine_.engine->rounds() : 0; }

  // ---- reduce_scatter: in has size()*n elements; out gets this rank's n reduced elements ------------
  void reduce_scatter(const_tensor_view in, tensor_view out, op o) {
    call<collective::reduce_scatter>({in, out, o});
  }
  template <std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  void reduce_scatter(const In& in, Out&& out, op o) { reduce_scatter(const_view_of(in), view_of(out), o); }

  // ---- allgather: out has size()*n elements, rank i's n elements at out + i*n ----------------------
  void allgather(const_tensor_view in, tensor_view out) { call<collective::allgather>({in, out}); }
  template <std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  void allgather(const In& in, Out&& out) { allgather(const_view_of(in), view_of(out)); }

  // ---- broadcast: root's elements to every rank ------------------------------------------------
  //! Out of place: `in` is read on root only (other ranks may pass an empty view); `out` everywhere.
  void broadcast(const_tensor_view in, tensor_view out, int root) {
    call<collective::broadcast>({in, out, op::sum, root});
  }
  void broadcast(tensor_view inout, int root) { broadcast(const_tensor_view(inout), inout, root); }
  template <std::ranges::contiguous_range R>
  void broadcast(R&& inout, int root) { broadcast(view_of(inout), root); }

  // ---- reduce: root's out[i] = op over ranks of in[i] --------------------------------------------
  //! `out` is written on root only (other ranks may pass an empty view); in place on root when
  //! in and out are the same buffer.
  void reduce(const_tensor_view in, tensor_view out, op o, int root) { call<collective::reduce>({in, out, o, root}); }
  void reduce(tensor_view inout, op o, int root) { reduce(const_tensor_view(inout), inout, o, root); }
  template <std::ranges::contiguous_range R>
  void reduce(R&& inout, op o, int root) { reduce(view_of(inout), o, root); }

  // ---- alltoall: block j of in goes to rank j; block j of out came from rank j ----------------------
  //! in and out both hold size() blocks of the same length; in place when they are the same buffer.
  void alltoall(const_tensor_view in, tensor_view out) { call<collective::alltoall>({in, out}); }
  void alltoall(tensor_view inout) { alltoall(const_tensor_view(inout), inout); }
  template <std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  void alltoall(const In& in, Out&& out) { alltoall(const_view_of(in), view_of(out)); }

  // ---- barrier: returns once every rank has entered it ------------------------------------------
  void barrier() { call<collective::barrier>({}); }

  // ---- point-to-point: one tensor to or from one other rank; wait() completes it (point_to_point.hpp)
  [[nodiscard]] p2p_request<transport_type> send(const_tensor_view data, int peer, std::uint32_t tag) {
    return detail::point_to_point(*this).send(data, peer, tag);
  }
  [[nodiscard]] p2p_request<transport_type> recv(tensor_view data, int peer, std::uint32_t tag) {
    return detail::point_to_point(*this).recv(data, peer, tag);
  }
  void wait(p2p_request<transport_type>& r) { detail::point_to_point(*this).wait(r); }
  [[nodiscard]] bool test(p2p_request<transport_type>& r) { return detail::point_to_point(*this).test(r); }

  //! The run-time control of an algorithm that has one, made by its prepare (tuned<...>: docs/algorithms.md).
  [[nodiscard]] auto& algorithm_control() requires requires { typename algorithm_type::control; } {
    using control = typename algorithm_type::control;
    return algorithm_state_.template get<control>([this]() -> std::shared_ptr<control> {
      throw error(on_rank(rank()) + "algorithm_control(): " + std::string(algorithm_type::name) + " made no control");
    });
  }

 private:
  friend class detail::communicator_fusion_port<communicator>;
  friend class detail::point_to_point<communicator>;
  using fusion_port = detail::communicator_fusion_port<communicator>;
  using engine_type = fusion::engine<fusion_port>;

  communicator(std::unique_ptr<transport_type> transport, communicator_options options, const std::string& origin)
      : owned_(std::move(transport)), transport_(owned_.get()), options_(options) {
    if (!transport_) throw invalid_argument("tutti::communicator: null transport");
    start(origin);
  }

  //! Both constructors, collectively: the node map, the algorithm's prepare (algorithm/concepts.hpp), the info line.
  void start(const std::string& origin) {
    const auto until = deadline::after(options_.timeout);
    nodes_ = algorithm::learn_nodes(*transport_, until);
    if constexpr (prepared_algorithm<algorithm_type, context_type>) {
      context_type c(*transport_, scratch_, tags::tuning_table, until, options_.chunk_bytes, nullptr, nullptr,
                     &algorithm_state_, nullptr, &nodes_);
      algorithm_type::prepare(c);
    }
    detail::announce<algorithm_type, codec_type, fusion_type>(*transport_, origin);
    inspector_ = detail::make_stall_inspector(*transport_, options_.stall_warn, options_.stall_timeout);
  }

  void check_async(const std::string& name, const_tensor_view in, tensor_view out, op o) {  // before anything is queued
    const auto bad = detail::check_async<codec_type>(name, in, out, o, rank(), size());
    if (!bad.empty()) throw invalid_argument(on_rank(rank()) + "allreduce_async '" + name + "': " + bad);
  }

  void allreduce_checked(const_tensor_view in, tensor_view out, op o, error_feedback* feedback) {
    call<collective::allreduce>({in, out, o}, feedback);
  }

  //! The one checked path of every collective: describe, check here, agree across ranks, run.
  template <collective C>
  void call(const detail::call_arguments& a, error_feedback* feedback = nullptr) {
    static_assert(sizeof(detail::check_implements<C, algorithm_type, context_type>) > 0);  // its own assert speaks
    constexpr const collective_traits& row = traits_of(C);
    if constexpr (row.encoded) static_assert(sizeof(detail::check_codec_carried<algorithm_type, codec_type>) > 0);
    const auto d = describe<C>(a);
    std::string bad = detail::check_shape<C>(d, a, rank(), size());
    if constexpr (row.encoded && !codec_type::lossless) {
      if (bad.empty()) bad = lossy_refusal<codec_type>(a.in.type, a.reduction);
    }
    if (bad.empty()) detail::check_aliasing<C>(a, rank(), bad);
    float* residual = nullptr;
    if (bad.empty() && feedback) residual = detail::residual_of(*feedback, a.in.count, where(d), bad);
    const auto used = detail::used_by<C>(a, rank());
    run(d, bad, [&](context_type& c) {
      if constexpr (row.encoded) c.set_residual(residual);
      if constexpr (detail::implements<C, algorithm_type, context_type>)
        detail::invoke<C, algorithm_type>(c, used.in ? a.in.data : a.out.data, used.out ? a.out.data : nullptr,
                                          d.count, static_cast<dtype>(d.type), a.reduction, a.root);
    });
  }

  template <collective C>
  collective_descriptor describe(const detail::call_arguments& a) {
    auto d = detail::describe<C>(a, size());
    d.sequence = on_engine_thread() ? (tags::fused_sequence_bit | ++engine_sequence_) : ++sequence_;
    static constexpr auto tag = detail::codec_tag<codec_type>();
    std::memcpy(d.codec, tag.data(), sizeof d.codec);
    return d;
  }

  [[nodiscard]] std::string where(const collective_descriptor& d) const { return call_prefix(rank(), d); }

  [[nodiscard]] bool on_engine_thread() const noexcept { return engine_.engine && engine_.engine->on_engine_thread(); }

  //! Checks arguments here and across ranks, then runs the algorithm under one deadline.
  template <class F>
  void run(const collective_descriptor& d, const std::string& bad, F&& body) {
    // Beside a running fusion engine, a blocking collective waits for its turn (granted when every
    // rank has entered it), and has the transport to itself until it returns.
    const bool engine_thread = on_engine_thread();
    const detail::watched_call watching(inspector_.get(), d);  // the stall inspector's view of this rank
    struct turn {
      engine_type* engine = nullptr;
      ~turn() { if (engine) engine->leave_blocking(); }
    } held;
    if (engine_.engine && !engine_thread)  // a stall met here is told like one met in the collective
      guarded(d, "while waiting for its turn beside the fusion engine: ", [&] {
        if (engine_.engine->enter_blocking(deadline::after(options_.timeout), "")) held.engine = engine_.engine.get();
      });
    if (!broken_.empty()) broken_.refuse(where(d));
    const auto until = deadline::after(options_.timeout);
    auto desc = d;
    desc.arguments_ok = bad.empty() ? 1 : 0;
    // An algorithm that checks arguments in its first synchronisation saves a round trip.
    // The engine's collectives were agreed on by its negotiation: no second check.
    const bool check = options_.check && !engine_thread;
    constexpr bool in_algorithm = checks_arguments<algorithm_type, context_type>;
    // The check below exchanges host descriptors through the transport: a device-memory transport
    // cannot carry them, so there the algorithm must check (algorithm::native does, through NCCL).
    static_assert(!transport_type::traits.device_memory || in_algorithm,
                  "tutti::communicator<...>: over a device-memory transport the Algorithm must check arguments "
                  "itself (checks_arguments<Transport> and agree(ctx); see tutti/algorithm/concepts.hpp)");
    if (check && !in_algorithm)
      guarded(desc, "while checking arguments across ranks: ", [&] { agreement_.agree(*transport_, desc, until); });
    const bool check_in_algorithm = check && in_algorithm;
    context_type c(*transport_, scratch_, d.sequence, until, options_.chunk_bytes, check_in_algorithm ? &desc : nullptr,
                   &agreement_.descriptors, &algorithm_state_, &d, &nodes_);
    if (engine_thread) c.set_phase_log(phase_log_);  // the engine's timeline, when it records
    if (!bad.empty()) {
      if constexpr (in_algorithm) {
        if (check_in_algorithm)
          guarded(desc, "while checking arguments across ranks: ", [&] { algorithm_type::agree(c); });
      }
      throw invalid_argument(where(d) + bad);
    }
    // debug: one line per collective, with its duration; trace: its start too.
    const bool timed = log_enabled(log_level::debug);
    if (log_enabled(log_level::trace)) detail::log_start(rank(), d, algorithm_type::name);
    const auto started = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    guarded(d, "", [&] { body(c); });
    if (timed) detail::log_took(rank(), d, algorithm_type::name, started);
  }

  //! A failure in the middle of a collective leaves buffers partly written and operations posted:
  //! withdraw them all (abort also tells the peers this rank is gone, so they stop waiting on it),
  //! mark the communicator unusable, and rethrow the same kind of error with the collective named.
  template <class F>
  void guarded(const collective_descriptor& d, const char* during, F&& body) {
    try {
      body();
    } catch (const mismatch& e) {
      throw_if_stalled(d, during, e);  // a late rank meets a stall's wreck
      throw;  // found before any data moved, identically on every rank: the communicator stays usable
    } catch (const invalid_argument&) {
      throw;
    } catch (const peer_lost& e) {
      throw_if_stalled(d, during, e);  // the peer gave up on a stall
      fail(detail::loss_error(*transport_, e, where(d) + during));  // the first loss, or a stall nobody could decide
    } catch (const timeout& e) {
      // The first rank to time out decides who is stuck; every rank says the same (stall_inspector.hpp).
      const std::string verdict = inspector_ ? detail::stalled_text(inspector_->verdict(d)) : "";
      fail(timeout(where(d) + during + verdict + e.what()));
    } catch (const error& e) {
      fail(transport_error(where(d) + during + e.what()));
    }
  }

  //! Once a rank has written a stall verdict, any failure here is that stall: fail with its text.
  void throw_if_stalled(const collective_descriptor& d, const char* during, const std::exception& e) {
    const auto verdict = inspector_ ? inspector_->decided() : std::nullopt;
    if (!verdict) return;
    fail(timeout(where(d) + during + detail::stalled_text(*verdict) + e.what()));
  }

  //! Keeps the failure (later calls are refused with its class: first_failure.hpp), aborts, throws it.
  template <class Error>
  [[noreturn]] void fail(const Error& e) { fail(std::make_exception_ptr(e)); }
  [[noreturn]] void fail(std::exception_ptr e) {
    broken_.record(e, "");
    transport_->abort();
    std::rethrow_exception(e);
  }

  std::unique_ptr<transport_type> owned_;
  transport_type* transport_;
  communicator_options options_;
  algorithm::scratch_buffer scratch_;
  algorithm::algorithm_state algorithm_state_;
  algorithm::phase_log* phase_log_ = nullptr;  //!< set by fusion_port around the engine's collectives
  algorithm::node_source nodes_;  //!< which node each rank is on: learnt at construction
  std::uint64_t sequence_ = 0;
  detail::first_failure broken_;  //!< set once a collective failed midway: data may be partial
  detail::argument_agreement<transport_type> agreement_;
  std::uint64_t engine_sequence_ = 0;  //!< the engine's collectives (its thread only)
  std::map<std::string, std::vector<float>> restored_feedback_;  //!< residuals given before the engine started
  std::unique_ptr<detail::stall_inspector> inspector_;  //!< before engine_: the engine's collectives report to it
  fusion::engine_slot<engine_type> engine_;  //!< last: stopped and joined before any member it uses goes
};

}  // namespace tutti
