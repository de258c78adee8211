//! @file communicator.hpp  tutti::communicator<Policies...>: the composition point.
//!
//! Policies come in any order; Boost.Hana sorts them into roles by their `tutti_role` tag, fills in
//! defaults (codec::none, fusion::none) and refuses, at compile time and in a sentence naming the
//! role, a missing, duplicated or ill-formed policy. At run time every collective first checks its
//! own arguments, then (unless TUTTI_CHECK=0) exchanges a small descriptor with every peer so that
//! ranks that disagree about the call all get the same tutti::mismatch before any data moves.
#pragma once
#include <boost/hana/append.hpp>
#include <boost/hana/filter.hpp>
#include <boost/hana/front.hpp>
#include <boost/hana/size.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <ranges>
#include <span>
#include <string>
#include <utility>
#include <type_traits>
#include <vector>

#include "tutti/algorithm/concepts.hpp"
#include "tutti/algorithm/context.hpp"
#include "tutti/algorithm/node_map.hpp"
#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/codec/concepts.hpp"
#include "tutti/codec/error_feedback.hpp"
#include "tutti/codec/none.hpp"
#include "tutti/core/collective.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/core/tensor_view.hpp"
#include "tutti/fusion/concepts.hpp"
#include "tutti/fusion/engine.hpp"
#include "tutti/fusion/handle.hpp"
#include "tutti/fusion/none.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/transport/exchange.hpp"
#include "tutti/tuner/pipeline.hpp"

namespace tutti {

//! Run-time settings of a communicator; from_env() reads the TUTTI_* variables.
struct communicator_options {
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);  //!< TUTTI_TIMEOUT: any one collective
  std::size_t chunk_bytes = tuner::pipeline_tuning{}.chunk_bytes;  //!< TUTTI_CHUNK_BYTES: pipelining unit of chunked algorithms
  bool check = true;                    //!< TUTTI_CHECK: cross-rank argument check before each collective
  //! TUTTI_STALL_TIMEOUT: how long a tensor enqueued by some ranks waits for the others before its
  //! handles fail naming the missing ranks (allreduce_async).
  std::chrono::nanoseconds stall_timeout = std::chrono::seconds(60);

  [[nodiscard]] static communicator_options from_env() {
    communicator_options o;
    o.timeout = config::timeout();
    o.chunk_bytes = config::bytes("TUTTI_CHUNK_BYTES", o.chunk_bytes, 64, std::size_t{1} << 30);
    o.check = config::flag("TUTTI_CHECK", o.check);
    o.stall_timeout = config::seconds("TUTTI_STALL_TIMEOUT", o.stall_timeout);
    return o;
  }
};

namespace detail {

//! "2 nodes of 2 ranks each", "2 nodes of 3 and 1 ranks", "1 node of 4 ranks".
inline std::string nodes_in_words(const std::vector<std::vector<int>>& members) {
  const std::size_t n = members.size();
  std::string text = std::to_string(n);
  text += n == 1 ? " node of " : " nodes of ";
  const bool even = std::all_of(members.begin(), members.end(), [&](const auto& m) { return m.size() == members[0].size(); });
  for (std::size_t k = 0; k < (even ? std::min<std::size_t>(n, 1) : n); ++k) {
    if (k) text += k + 1 == n ? " and " : ", ";
    text += std::to_string(members[k].size());  // appended piece by piece: GCC 12's -Wrestrict false positive
  }
  text += even && n > 1 ? " ranks each" : " ranks";
  return text;
}

namespace hana = boost::hana;

template <class P, class = void>
struct role_of {
  using type = void;
};
template <class P>
struct role_of<P, std::void_t<typename P::tutti_role>> {
  using type = typename P::tutti_role;
};

//! Instantiated once per template argument so the diagnostic's "required from" names the type.
template <class P>
struct check_is_policy {
  static constexpr bool value = !std::is_void_v<typename role_of<P>::type>;
  static_assert(value,
                "tutti::communicator<...>: every template argument must be a Transport, Algorithm, Codec or "
                "FusionStrategy (a class declaring `using tutti_role = tutti::role::...;`); this one is none of them");
};

template <class Role, class... Ps>
constexpr auto policies_with_role() {
  return hana::filter(hana::tuple_t<Ps...>, [](auto t) {
    return hana::bool_c<std::is_same_v<typename role_of<typename decltype(t)::type>::type, Role>>;
  });
}

//! Stands in for a policy that was not given, so the static_assert naming the role is the only error.
template <class Role>
struct missing_policy {
  struct request {};
};

//! The policy of `Role` among Ps (Default when there is none) and how many were given.
template <class Role, class Default, class... Ps>
struct pick {
  static constexpr auto found = policies_with_role<Role, Ps...>();
  static constexpr std::size_t count = decltype(hana::size(found))::value;
  using type = typename std::remove_cvref_t<decltype(hana::front(hana::append(found, hana::type_c<Default>)))>::type;
};

//! A transport that moves device memory needs an algorithm that handles it (device_memory_algorithm).
template <class T, class A>
constexpr bool device_memory_fits() {
  if constexpr (transport_policy<T>) return !T::traits.device_memory || device_memory_algorithm<A>;
  else return true;
}

template <class... Ps>
struct sorted_policies {
  static constexpr bool all_policies = (check_is_policy<Ps>::value && ...);
  static_assert(all_policies, "tutti::communicator<...>: a template argument is not a tutti policy (see above)");

  using transport_pick = pick<role::transport, missing_policy<role::transport>, Ps...>;
  using algorithm_pick = pick<role::algorithm, missing_policy<role::algorithm>, Ps...>;
  using codec_pick = pick<role::codec, codec::none, Ps...>;
  using fusion_pick = pick<role::fusion, fusion::none, Ps...>;

  static_assert(transport_pick::count != 0, "tutti::communicator<...> requires exactly one Transport; got none");
  static_assert(transport_pick::count <= 1, "tutti::communicator<...> requires exactly one Transport; got more than one");
  static_assert(algorithm_pick::count != 0, "tutti::communicator<...> requires exactly one Algorithm; got none");
  static_assert(algorithm_pick::count <= 1, "tutti::communicator<...> requires exactly one Algorithm; got more than one");
  static_assert(codec_pick::count <= 1, "tutti::communicator<...> accepts at most one Codec; got more than one");
  static_assert(fusion_pick::count <= 1,
                "tutti::communicator<...> accepts at most one FusionStrategy; got more than one");

  using transport = typename transport_pick::type;
  using algorithm = typename algorithm_pick::type;
  using codec = typename codec_pick::type;
  using fusion = typename fusion_pick::type;

  // Checked only when the role was given once, so one mistake gives one message.
  static_assert(transport_pick::count != 1 || transport_policy<transport>,
                "tutti::communicator<...>: the Transport does not satisfy tutti::transport_policy "
                "(needs request, send, recv, test, wait, rank, world_size, traits; see tutti/transport/concepts.hpp)");
  static_assert(algorithm_pick::count != 1 || algorithm_policy<algorithm>,
                "tutti::communicator<...>: the Algorithm does not satisfy tutti::algorithm_policy "
                "(needs a static constexpr name; see tutti/algorithm/concepts.hpp)");
  static_assert(codec_pick::count != 1 || codec_policy<codec>,
                "tutti::communicator<...>: the Codec does not satisfy tutti::codec_policy "
                "(needs name, lossless, encoded_bytes; see tutti/codec/concepts.hpp)");
  static_assert(fusion_pick::count != 1 || fusion_policy<fusion>,
                "tutti::communicator<...>: the FusionStrategy does not satisfy tutti::fusion_policy "
                "(needs name, threshold_bytes, cycle_time, autotune; see tutti/fusion/concepts.hpp)");
  static_assert(algorithm_pick::count != 1 || !algorithm_policy<algorithm> || device_memory_fits<transport, algorithm>(),
                "tutti::communicator<...>: the Transport moves device memory (traits.device_memory) but the Algorithm "
                "reads and writes buffers on the host; over transport::nccl use algorithm::native (an algorithm that "
                "handles device memory says so with `static constexpr bool handles_device_memory = true;`)");
  static_assert(codec_pick::count != 1 || !codec_policy<codec> || codec::lossless || lossy_codec_policy<codec> ||
                    feedback_codec_policy<codec>,
                "tutti::communicator<...>: a lossy Codec must satisfy tutti::lossy_codec_policy (accepts, encode, "
                "decode, decode_add, max_error) or tutti::feedback_codec_policy (error_feedback, accepts, encode "
                "with a residual, decode, decode_add); see tutti/codec/concepts.hpp");
};

//! Instantiated by allreduce with a lossy codec, so the diagnostic's "required from" line names
//! both the Algorithm and the Codec.
template <class Algorithm, class Codec>
struct check_codec_carried {
  static constexpr bool value = Codec::lossless || lossy_codec_carrier<Algorithm>;
  static_assert(value,
                "tutti::communicator<...>::allreduce: this Algorithm cannot carry a lossy Codec (its allreduce "
                "would sum in the wire format or re-encode partial sums at every hop); algorithms that carry "
                "them: ring, direct, halving_doubling, hierarchical<I, X> with such an X, automatic. An "
                "algorithm says it does with `static constexpr bool carries_lossy_codecs = true;` "
                "(the note below names the Algorithm and the Codec)");
};

//! Codecs with error feedback need the caller's residual; the others take none.
template <class Codec, bool Given>
struct check_feedback {
  static constexpr bool needed = feedback_codec_policy<Codec>;
  static_assert(Given || !needed,
                "tutti::communicator<...>::allreduce: this Codec (topk, onebit) needs error feedback: pass the "
                "tensor's tutti::error_feedback, allreduce(tensor, op, feedback), the same one at every step "
                "(the note below names the Codec)");
  static_assert(!Given || needed,
                "tutti::communicator<...>::allreduce: this Codec takes no error feedback (only topk and onebit "
                "do); call allreduce(tensor, op) (the note below names the Codec)");
  static constexpr bool value = Given == needed;
};

//! A lossy codec carries float32 only; where the element type is known, say so at compile time.
template <class Codec, class Element>
struct check_codec_element {
  static constexpr bool value = Codec::lossless || std::is_same_v<std::remove_cv_t<Element>, float>;
  static_assert(value,
                "tutti::communicator<...>::allreduce: a lossy Codec (fp16, bf16, int8) carries float elements "
                "only; reduce integers or doubles with a communicator whose codec is codec::none "
                "(the note below names the Codec and the element type)");
};

//! Holds a communicator's fusion engine. The engine's thread refers to its communicator, so a
//! communicator whose engine runs cannot move; moving one whose engine has not started is fine.
template <class Engine>
struct engine_slot {
  std::unique_ptr<Engine> engine;
  engine_slot() = default;
  engine_slot(engine_slot&& o) : engine(checked(std::move(o))) {}
  engine_slot& operator=(engine_slot&& o) {
    if (engine) throw invalid_argument("tutti::communicator: cannot be assigned to while its fusion engine runs");
    engine = checked(std::move(o));
    return *this;
  }
  ~engine_slot() { engine.reset(); }  // stops and joins the thread before the members it uses go

 private:
  static std::unique_ptr<Engine> checked(engine_slot&& o) {
    if (o.engine)
      throw invalid_argument("tutti::communicator: cannot be moved while its fusion engine runs (allreduce_async "
                             "started it); keep the communicator where it is, or move it before the first call");
    return nullptr;
  }
};

inline bool overlaps(const void* a, std::size_t an, const void* b, std::size_t bn) noexcept {
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return an && bn && pa < pb + bn && pb < pa + an;
}

}  // namespace detail

template <class... Policies>
class communicator {
  using policies = detail::sorted_policies<Policies...>;

 public:
  using transport_type = typename policies::transport;
  using algorithm_type = typename policies::algorithm;
  using codec_type = typename policies::codec;
  using fusion_type = typename policies::fusion;
  using context_type = algorithm::context<transport_type, codec_type>;

  //! Uses a transport that the caller owns and keeps alive longer than the communicator.
  explicit communicator(transport_type& transport, communicator_options options = communicator_options::from_env())
      : transport_(&transport), options_(options) {
    nodes_ = algorithm::learn_nodes(*transport_, deadline::after(options_.timeout));  // collective
    announce("made by the caller");
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

  [[nodiscard]] int rank() const noexcept { return transport_->rank(); }
  [[nodiscard]] int size() const noexcept { return transport_->world_size(); }
  [[nodiscard]] const communicator_options& options() const noexcept { return options_; }
  [[nodiscard]] transport_type& transport() noexcept { return *transport_; }

  // Each collective static_asserts that the algorithm implements it and calls it under
  // `if constexpr`, so a missing collective is one error, not two.

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
  //! rank's copy is reduced (read `out`, or reuse the buffers, only after wait() returns). Every rank
  //! must enqueue the same names with the same counts, dtypes and ops, in any order and at any time:
  //! the engine agrees which are ready everywhere and fuses them by the FusionStrategy. A name
  //! enqueued by some ranks only fails after TUTTI_STALL_TIMEOUT (tutti::timeout naming the missing
  //! ranks); different counts, dtypes or ops fail with tutti::mismatch naming the tensor. The first
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

  //! Starts the fusion engine now (allreduce_async does on its first call). Collective: every rank
  //! calls it, at the same point among its blocking collectives, and the ranks' TUTTI_FUSION_THRESHOLD,
  //! TUTTI_CYCLE_TIME and TUTTI_AUTOTUNE must agree (tutti::mismatch naming the variable otherwise).
  void start_fusion_engine() {
    static_assert(!transport_type::traits.device_memory,
                  "tutti::communicator<...>::allreduce_async: the fusion engine packs tensors in host memory, so it "
                  "does not run over a device-memory transport (transport::nccl); call allreduce per tensor");
    if (engine_.engine) return;
    if (!broken_.empty()) throw error("rank " + std::to_string(rank()) + ": allreduce_async: communicator is unusable after an earlier failure: " + broken_);
    auto settings = fusion_settings();
    std::array<std::uint64_t, 3> mine{settings.initial.threshold_bytes,
                                      static_cast<std::uint64_t>(settings.initial.cycle_time.count()),
                                      settings.autotune ? 1u : 0u};
    // A barrier (every algorithm has one, and its descriptor check says so if ranks are in other
    // collectives), then the settings straight over the transport with the engine's own tag.
    barrier();
    std::vector<std::array<std::uint64_t, 3>> all(static_cast<std::size_t>(size()));
    all[static_cast<std::size_t>(rank())] = mine;
    transport::exchange_with_all(*transport_, tags::engine_start, std::span(all),
                                 deadline::after(options_.timeout), requests_);
    static constexpr const char* variables[] = {"TUTTI_FUSION_THRESHOLD (bytes)", "TUTTI_CYCLE_TIME (microseconds)",
                                                "TUTTI_AUTOTUNE"};
    for (std::size_t v = 0; v < mine.size(); ++v)
      for (std::size_t r = 1; r < all.size(); ++r)
        if (all[r][v] != all[0][v])
          throw mismatch("rank " + std::to_string(rank()) + ": starting the fusion engine: " + variables[v] +
                         " differs across ranks: rank 0 has " + std::to_string(all[0][v]) + ", rank " +
                         std::to_string(r) + " has " + std::to_string(all[r][v]));
    std::unique_ptr<fusion::tuner> tuner;
    if (settings.autotune) {
      if constexpr (requires { fusion_type::make_tuner(settings.initial, codec_type::name, algorithm_type::name); }) {
        if (rank() == 0) tuner = fusion_type::make_tuner(settings.initial, codec_type::name, algorithm_type::name);
      } else {
        throw invalid_argument("rank " + std::to_string(rank()) + ": TUTTI_AUTOTUNE=1 needs the fusion::autotuned "
                               "strategy (tutti/fusion/autotuned.hpp, with Eigen); this communicator's is fusion::" +
                               std::string(fusion_type::name));
      }
    }
    engine_.engine = std::make_unique<engine_type>(*this, settings, std::move(tuner),
                                                   fusion::timeline::from_env(rank(), size()));
    if (!restored_feedback_.empty()) engine_.engine->restore_feedback(std::exchange(restored_feedback_, {}));
    log(log_level::info, rank(),
        "fusion engine started: threshold " + std::to_string(settings.initial.threshold_bytes) + " bytes, cycle " +
            std::to_string(settings.initial.cycle_time.count()) + " us, autotune " + (settings.autotune ? "on" : "off"));
  }

  //! The fusion parameters in force (the autotuner's latest choice); the strategy's before the engine starts.
  [[nodiscard]] fusion::parameters fusion_parameters() const {
    if (engine_.engine) return engine_.engine->current_parameters();
    return fusion_settings().initial;
  }
  //! With an error-feedback codec (topk, onebit), allreduce_async keeps one residual per tensor name
  //! on each rank: this rank's, for a checkpoint (call it when no tensor is pending).
  [[nodiscard]] std::map<std::string, std::vector<float>> fusion_feedback_state() const {
    return engine_.engine ? engine_.engine->feedback_state() : restored_feedback_;
  }
  //! Gives the residuals back after a restart (before or after the engine starts).
  void restore_fusion_feedback(std::map<std::string, std::vector<float>> state) {
    if (engine_.engine) engine_.engine->restore_feedback(state);
    else restored_feedback_ = std::move(state);
  }

  //! Negotiation rounds the engine has run (0 before it starts): for tests and diagnostics.
  [[nodiscard]] std::uint64_t fusion_rounds() const noexcept { return engine_.engine ? engine_.engine->rounds() : 0; }

  // ---- reduce_scatter: in has size()*n elements; out gets this rank's n reduced elements ------------
  void reduce_scatter(const_tensor_view in, tensor_view out, op o) {
    static_assert(has_reduce_scatter<algorithm_type, context_type>,
                  "tutti::communicator<...>::reduce_scatter: the Algorithm does not implement reduce_scatter, or its signature differs; "
                  "expected: static void reduce_scatter(Context&, const void* in, void* out, std::size_t count_per_rank, tutti::dtype, tutti::op); built algorithms that have it: ring, direct, halving_doubling, hierarchical<I, X> (when both have it) "
                  "(the note below names the Algorithm)");
    auto d = describe(collective::reduce_scatter, in.type, o, out.count, -1);
    std::string bad = check_common(d, in, out);
    const std::size_t n = static_cast<std::size_t>(size());
    if (bad.empty() && (out.count > SIZE_MAX / n || in.count != out.count * n))
      bad = "send has " + std::to_string(in.count) + " elements but must have world_size (" + std::to_string(n) +
            ") x recv count (" + std::to_string(out.count) + ")";
    if (bad.empty())
      bad = check_aliasing(in.data, in.bytes(), out.data, out.bytes(),
                           out.data == in.bytes_ptr() + static_cast<std::size_t>(rank()) * out.bytes());
    run(d, bad, [&](context_type& c) {
      if constexpr (has_reduce_scatter<algorithm_type, context_type>)
        algorithm_type::reduce_scatter(c, in.data, out.data, out.count, in.type, o);
    });
  }
  template <std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  void reduce_scatter(const In& in, Out&& out, op o) { reduce_scatter(const_view_of(in), view_of(out), o); }

  // ---- allgather: out has size()*n elements, rank i's n elements at out + i*n ----------------------
  void allgather(const_tensor_view in, tensor_view out) {
    static_assert(has_allgather<algorithm_type, context_type>,
                  "tutti::communicator<...>::allgather: the Algorithm does not implement allgather, or its signature differs; "
                  "expected: static void allgather(Context&, const void* in, void* out, std::size_t count_per_rank, tutti::dtype); built algorithms that have it: ring, direct, halving_doubling, hierarchical<I, X> (when both have it) "
                  "(the note below names the Algorithm)");
    auto d = describe(collective::allgather, in.type, op::sum, in.count, -1);
    std::string bad = check_common(d, in, out);
    const std::size_t n = static_cast<std::size_t>(size());
    if (bad.empty() && (in.count > SIZE_MAX / n || out.count != in.count * n))
      bad = "recv has " + std::to_string(out.count) + " elements but must have world_size (" + std::to_string(n) +
            ") x send count (" + std::to_string(in.count) + ")";
    if (bad.empty())
      bad = check_aliasing(in.data, in.bytes(), out.data, out.bytes(),
                           in.data == out.bytes_ptr() + static_cast<std::size_t>(rank()) * in.bytes());
    run(d, bad, [&](context_type& c) {
      if constexpr (has_allgather<algorithm_type, context_type>)
        algorithm_type::allgather(c, in.data, out.data, in.count, in.type);
    });
  }
  template <std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  void allgather(const In& in, Out&& out) { allgather(const_view_of(in), view_of(out)); }

  // ---- broadcast: root's elements to every rank ------------------------------------------------
  //! Out of place: `in` is read on root only (other ranks may pass an empty view); `out` everywhere.
  void broadcast(const_tensor_view in, tensor_view out, int root) {
    static_assert(has_broadcast<algorithm_type, context_type>,
                  "tutti::communicator<...>::broadcast: the Algorithm does not implement broadcast, or its signature differs; "
                  "expected: static void broadcast(Context&, const void* in, void* out, std::size_t count, tutti::dtype, int root); built algorithms that have it: ring, direct, tree, halving_doubling, hierarchical<I, X> (when both have it) "
                  "(the note below names the Algorithm)");
    auto d = describe(collective::broadcast, out.type, op::sum, out.count, root);
    const bool is_root = root == rank();
    std::string bad = check_common(d, is_root ? in : const_tensor_view(out), out);
    if (bad.empty() && (root < 0 || root >= size()))
      bad = "root " + std::to_string(root) + " is outside [0, " + std::to_string(size()) + ")";
    if (bad.empty() && is_root && in.count != out.count)
      bad = "root's send has " + std::to_string(in.count) + " elements but recv has " + std::to_string(out.count);
    if (bad.empty() && is_root) bad = check_aliasing(in.data, in.bytes(), out.data, out.bytes(), in.data == out.data);
    run(d, bad, [&](context_type& c) {
      if constexpr (has_broadcast<algorithm_type, context_type>)
        algorithm_type::broadcast(c, is_root ? in.data : out.data, out.data, out.count, out.type, root);
    });
  }
  void broadcast(tensor_view inout, int root) { broadcast(const_tensor_view(inout), inout, root); }
  template <std::ranges::contiguous_range R>
  void broadcast(R&& inout, int root) { broadcast(view_of(inout), root); }

  // ---- reduce: root's out[i] = op over ranks of in[i] --------------------------------------------
  //! `out` is written on root only (other ranks may pass an empty view); in place on root when
  //! in and out are the same buffer.
  void reduce(const_tensor_view in, tensor_view out, op o, int root) {
    static_assert(has_reduce<algorithm_type, context_type>,
                  "tutti::communicator<...>::reduce: the Algorithm does not implement reduce, or its signature differs; "
                  "expected: static void reduce(Context&, const void* in, void* out, std::size_t count, tutti::dtype, tutti::op, int root); built algorithms that have it: ring, direct, tree, halving_doubling, hierarchical<I, X> (when both have it) "
                  "(the note below names the Algorithm)");
    auto d = describe(collective::reduce, in.type, o, in.count, root);
    const bool is_root = root == rank();
    std::string bad = check_common(d, in, is_root ? out : tensor_view(nullptr, 0, in.type));
    if (bad.empty() && (root < 0 || root >= size()))
      bad = "root " + std::to_string(root) + " is outside [0, " + std::to_string(size()) + ")";
    if (bad.empty() && is_root && in.count != out.count)
      bad = "send has " + std::to_string(in.count) + " elements but root's recv has " + std::to_string(out.count);
    if (bad.empty() && is_root) bad = check_aliasing(in.data, in.bytes(), out.data, out.bytes(), in.data == out.data);
    run(d, bad, [&](context_type& c) {
      if constexpr (has_reduce<algorithm_type, context_type>)
        algorithm_type::reduce(c, in.data, is_root ? out.data : nullptr, in.count, in.type, o, root);
    });
  }
  void reduce(tensor_view inout, op o, int root) { reduce(const_tensor_view(inout), inout, o, root); }
  template <std::ranges::contiguous_range R>
  void reduce(R&& inout, op o, int root) { reduce(view_of(inout), o, root); }

  // ---- alltoall: block j of in goes to rank j; block j of out came from rank j ----------------------
  //! in and out both hold size() blocks of the same length; in place when they are the same buffer.
  void alltoall(const_tensor_view in, tensor_view out) {
    static_assert(has_alltoall<algorithm_type, context_type>,
                  "tutti::communicator<...>::alltoall: the Algorithm does not implement alltoall, or its signature differs; "
                  "expected: static void alltoall(Context&, const void* in, void* out, std::size_t count_per_rank, tutti::dtype); built algorithms that have it: ring, direct, halving_doubling, hierarchical<I, X> "
                  "(the note below names the Algorithm)");
    const std::size_t n = static_cast<std::size_t>(size());
    auto d = describe(collective::alltoall, in.type, op::sum, in.count / n, -1);
    std::string bad = check_common(d, in, out);
    if (bad.empty() && in.count % n != 0)
      bad = "send has " + std::to_string(in.count) + " elements, not a multiple of world_size (" + std::to_string(n) + ")";
    if (bad.empty() && in.count != out.count)
      bad = "send has " + std::to_string(in.count) + " elements but recv has " + std::to_string(out.count);
    if (bad.empty()) bad = check_aliasing(in.data, in.bytes(), out.data, out.bytes(), in.data == out.data);
    run(d, bad, [&](context_type& c) {
      if constexpr (has_alltoall<algorithm_type, context_type>)
        algorithm_type::alltoall(c, in.data, out.data, in.count / n, in.type);
    });
  }
  void alltoall(tensor_view inout) { alltoall(const_tensor_view(inout), inout); }
  template <std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  void alltoall(const In& in, Out&& out) { alltoall(const_view_of(in), view_of(out)); }

  // ---- barrier: returns once every rank has entered it ------------------------------------------
  void barrier() {
    static_assert(has_barrier<algorithm_type, context_type>,
                  "tutti::communicator<...>::barrier: the Algorithm does not implement barrier, or its signature differs; "
                  "expected: static void barrier(Context&); built algorithms that have it: ring, direct, tree, halving_doubling, hierarchical<I, X> (when both have it) "
                  "(the note below names the Algorithm)");
    auto d = describe(collective::barrier, dtype::u8, op::sum, 0, -1);
    run(d, std::string{}, [&](context_type& c) {
      if constexpr (has_barrier<algorithm_type, context_type>) algorithm_type::barrier(c);
    });
  }

 private:
  template <class T>
  static tensor_view view_of(T& r) { return tensor_view(std::span(std::ranges::data(r), std::ranges::size(r))); }
  template <class T>
  static const_tensor_view const_view_of(const T& r) {
    return const_tensor_view(std::span(std::ranges::data(r), std::ranges::size(r)));
  }

  using engine_type = fusion::engine<communicator>;
  friend engine_type;

  //! The engine's collectives: the same checked allreduce, numbered in the engine's own sequence.
  void fused_allreduce(const_tensor_view in, tensor_view out, op o, error_feedback* feedback, const std::string&) {
    allreduce_checked(in, out, o, feedback);
  }
  //! Where the engine's collectives record their phases (its timeline), or null.
  void trace_phases(algorithm::phase_log* log) noexcept { phase_log_ = log; }
  //! The engine stopped on an error outside a collective (its negotiation failed): like a failed collective.
  void engine_failed(const std::string& what) {
    if (!broken_.empty()) return;
    broken_ = "rank " + std::to_string(rank()) + ": fusion engine: " + what;
    transport_->abort();
  }

  //! The strategy's parameters with the TUTTI_* overrides.
  fusion::engine_settings fusion_settings() const {
    fusion::engine_settings s;
    s.initial.threshold_bytes = config::bytes("TUTTI_FUSION_THRESHOLD", fusion_type::threshold_bytes, 0, std::size_t{1} << 30);
    s.initial.cycle_time = config::milliseconds("TUTTI_CYCLE_TIME", fusion_type::cycle_time, std::chrono::seconds(10));
    s.stall_timeout = options_.stall_timeout;
    s.timeout = options_.timeout;
    s.autotune = config::flag("TUTTI_AUTOTUNE", fusion_type::autotune);
    return s;
  }

  //! allreduce_async's own argument checks, before anything is queued (this rank only: the engine's
  //! negotiation compares ranks).
  void check_async(const std::string& name, const_tensor_view in, tensor_view out, op o) {
    std::string bad;
    if (name.empty()) bad = "the tensor name is empty";
    else if (!is_valid(in.type)) bad = "dtype value " + std::to_string(static_cast<int>(in.type)) + " is not a tutti::dtype";
    else if (!is_valid(o)) bad = "op value " + std::to_string(static_cast<int>(o)) + " is not a tutti::op";
    else if (in.type != out.type)
      bad = "send dtype " + std::string(name_of(in.type)) + " differs from recv dtype " + std::string(name_of(out.type));
    else if (in.count != out.count)
      bad = "send has " + std::to_string(in.count) + " elements but recv has " + std::to_string(out.count);
    else if ((in.count && !in.data) || (out.count && !out.data)) bad = "null buffer with a non-zero count";
    else if (in.count > SIZE_MAX / size_of(in.type) / static_cast<std::size_t>(size()))
      bad = "count " + std::to_string(in.count) + " is too large to address in bytes";
    if constexpr (!codec_type::lossless) {
      if (bad.empty()) bad = lossy_refusal<codec_type>(in.type, o);
    }
    if (bad.empty()) bad = check_aliasing(in.data, in.bytes(), out.data, out.bytes(), in.data == out.data);
    if (!bad.empty()) throw invalid_argument("rank " + std::to_string(rank()) + ": allreduce_async '" + name + "': " + bad);
  }

  void allreduce_checked(const_tensor_view in, tensor_view out, op o, error_feedback* feedback) {
    static_assert(has_allreduce<algorithm_type, context_type>,
                  "tutti::communicator<...>::allreduce: the Algorithm does not implement allreduce, or its signature differs; "
                  "expected: static void allreduce(Context&, const void* in, void* out, std::size_t count, tutti::dtype, tutti::op); built algorithms that have it: ring, direct, tree, halving_doubling, hierarchical<I, X>, automatic "
                  "(the note below names the Algorithm)");
    static_assert(sizeof(detail::check_codec_carried<algorithm_type, codec_type>) > 0);  // its own assert speaks
    auto d = describe(collective::allreduce, in.type, o, in.count, -1);
    std::string bad = check_common(d, in, out);
    if (bad.empty() && in.count != out.count)
      bad = "send has " + std::to_string(in.count) + " elements but recv has " + std::to_string(out.count);
    if constexpr (!codec_type::lossless) {
      if (bad.empty()) bad = lossy_refusal<codec_type>(in.type, o);
    }
    if (bad.empty()) bad = check_aliasing(in.data, in.bytes(), out.data, out.bytes(), in.data == out.data);
    float* residual = nullptr;
    if (bad.empty() && feedback) {
      if (!feedback->residual().empty() && feedback->residual().size() != in.count)
        bad = "this error_feedback holds the residual of " + std::to_string(feedback->residual().size()) +
              " elements, but the tensor has " + std::to_string(in.count) + " (keep one error_feedback per tensor)";
      else
        residual = feedback->residual_for(in.count, where(d));
    }
    run(d, bad, [&](context_type& c) {
      c.set_residual(residual);
      if constexpr (has_allreduce<algorithm_type, context_type>)
        algorithm_type::allreduce(c, in.data, out.data, in.count, in.type, o);
    });
  }

  collective_descriptor describe(collective kind, dtype t, op o, std::size_t count, int root) {
    collective_descriptor d;
    d.sequence = on_engine_thread() ? (tags::fused_sequence_bit | ++engine_sequence_) : ++sequence_;
    d.kind = static_cast<std::uint8_t>(kind);
    d.type = static_cast<std::uint8_t>(t);
    d.reduction = static_cast<std::uint8_t>(o);
    d.count = count;
    d.root = root;
    std::string codec_name(codec_type::name);  // with its parameter when it has one: topk at 1 % is "topk10"
    if constexpr (requires { codec_type::parameter; }) codec_name += std::to_string(codec_type::parameter);
    std::memcpy(d.codec, codec_name.data(), std::min(codec_name.size(), sizeof d.codec));
    return d;
  }

  [[nodiscard]] std::string where(const collective_descriptor& d) const {
    return call_prefix(rank(), d);
  }

  [[nodiscard]] bool on_engine_thread() const noexcept { return engine_.engine && engine_.engine->on_engine_thread(); }

  std::string check_common(const collective_descriptor& d, const_tensor_view in, tensor_view out) const {
    const auto t = static_cast<dtype>(d.type);
    if (!is_valid(t)) return "dtype value " + std::to_string(d.type) + " is not a tutti::dtype";
    if (!is_valid(static_cast<op>(d.reduction))) return "op value " + std::to_string(d.reduction) + " is not a tutti::op";
    if (in.type != out.type)
      return "send dtype " + std::string(name_of(in.type)) + " differs from recv dtype " + std::string(name_of(out.type));
    const std::size_t limit = SIZE_MAX / size_of(t) / static_cast<std::size_t>(size());
    if (in.count > limit || out.count > limit)
      return "count " + std::to_string(std::max(in.count, out.count)) + " is too large to address in bytes";
    if ((in.count && !in.data) || (out.count && !out.data)) return "null buffer with a non-zero count";
    return {};
  }

  //! Out-of-place buffers must not overlap; the one sanctioned in-place layout is allowed.
  static std::string check_aliasing(const void* in, std::size_t in_bytes, const void* out, std::size_t out_bytes,
                                    bool sanctioned_in_place) {
    if (sanctioned_in_place || !detail::overlaps(in, in_bytes, out, out_bytes)) return {};
    return "send and recv buffers overlap without being the in-place layout";
  }

  communicator(std::unique_ptr<transport_type> transport, communicator_options options, const std::string& origin)
      : owned_(std::move(transport)), transport_(owned_.get()), options_(options) {
    if (!transport_) throw invalid_argument("tutti::communicator: null transport");
    nodes_ = algorithm::learn_nodes(*transport_, deadline::after(options_.timeout));  // collective
    announce(origin);
  }

  //! The transport concept does not ask for a name: a user's transport may have none.
  [[nodiscard]] static std::string transport_name() {
    if constexpr (requires { std::string(transport_type::name); }) return std::string(transport_type::name);
    else return "(a transport without a name)";
  }

  //! At info, one line per communicator: who it is, what it is made of (what an algorithm such as
  //! automatic resolved to, when it says), where it runs.
  void announce(const std::string& origin) const {
    if (!log_enabled(log_level::info)) return;
    std::string algorithm(algorithm_type::name);
    if constexpr (requires(const transport_type& t) { std::string(algorithm_type::resolved(t)); })
      algorithm += " (" + std::string(algorithm_type::resolved(*transport_)) + ")";
    std::string line = "communicator: rank " + std::to_string(rank()) + " of " + std::to_string(size()) +
                       "; transport " + transport_name() + " (" + origin + "); algorithm " + algorithm +
                       "; codec " + std::string(codec_type::name) + "; fusion " + std::string(fusion_type::name);
    if constexpr (requires(const transport_type& t) { t.nodes().members; })
      line += "; " + detail::nodes_in_words(transport_->nodes().members);
    if constexpr (requires(const transport_type& t) { std::string(t.node_id()); })
      line += "; node " + std::string(transport_->node_id());
    log(log_level::info, rank(), line);
  }

  //! "allreduce #5: 1048576 float, op sum, algorithm ring" (no rank: the logger prefixes it).
  [[nodiscard]] std::string summary(const collective_descriptor& d) const {
    const auto kind = static_cast<collective>(d.kind);
    std::string text = std::string(name_of(kind)) + " #" + std::to_string(d.sequence) + ": " +
                       std::to_string(d.count) + " " + std::string(name_of(static_cast<dtype>(d.type)));
    if (kind == collective::allreduce || kind == collective::reduce_scatter || kind == collective::reduce)
      text += ", op " + std::string(name_of(static_cast<op>(d.reduction)));
    if (d.root >= 0) text += ", root " + std::to_string(d.root);
    return text + ", algorithm " + std::string(algorithm_type::name);
  }

  //! Checks arguments here and across ranks, then runs the algorithm under one deadline.
  template <class F>
  void run(const collective_descriptor& d, const std::string& bad, F&& body) {
    // Beside a running fusion engine, a blocking collective waits for its turn (granted when every
    // rank has entered it), and has the transport to itself until it returns.
    const bool engine_thread = on_engine_thread();
    struct turn {
      engine_type* engine = nullptr;
      ~turn() {
        if (engine) engine->leave_blocking();
      }
    } held;
    if (engine_.engine && !engine_thread && engine_.engine->enter_blocking(deadline::after(options_.timeout), where(d)))
      held.engine = engine_.engine.get();
    if (!broken_.empty()) throw error(where(d) + "communicator is unusable after an earlier failure: " + broken_);
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
      guarded(desc, "while checking arguments across ranks: ", [&] { agree(desc, until); });
    const bool check_in_algorithm = check && in_algorithm;
    context_type c(*transport_, scratch_, d.sequence, until, options_.chunk_bytes, check_in_algorithm ? &desc : nullptr,
                   &descriptors_, &algorithm_state_, &d, &nodes_);
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
    if (log_enabled(log_level::trace)) log(log_level::trace, rank(), "start " + summary(d));
    const auto started = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    guarded(d, "", [&] { body(c); });
    if (timed) {
      char took[32];
      std::snprintf(took, sizeof took, "%.3f ms",
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
      log(log_level::debug, rank(), summary(d) + ": " + took);
    }
  }

  //! A failure in the middle of a collective leaves buffers partly written and operations posted:
  //! withdraw them all (abort also tells the peers this rank is gone, so they stop waiting on it),
  //! mark the communicator unusable, and rethrow the same kind of error with the collective named.
  template <class F>
  void guarded(const collective_descriptor& d, const char* during, F&& body) {
    try {
      body();
    } catch (const mismatch&) {
      throw;  // found before any data moved, identically on every rank: the communicator stays usable
    } catch (const invalid_argument&) {
      throw;
    } catch (const peer_lost& e) {
      const auto [peer, what] = first_loss(e);  // before fail(): our abort is what peers see next
      fail(d, what.c_str());
      throw peer_lost(peer, where(d) + during + what);
    } catch (const timeout& e) {
      fail(d, e.what());
      throw timeout(where(d) + during + e.what());
    } catch (const error& e) {
      fail(d, e.what());
      throw transport_error(where(d) + during + e.what());
    }
  }

  //! Which rank was lost first. A rank that sees a peer die aborts, and the ranks waiting on it
  //! then see *it* vanish: without help each would blame its own neighbour. A transport that can
  //! record the first loss job-wide (multi_node, through its store) says who it really was.
  std::pair<int, std::string> first_loss(const peer_lost& e) {
    if constexpr (requires(transport_type& t, int p, const std::string& w) {
                    { t.first_loss(p, w) } -> std::same_as<std::pair<int, std::string>>;
                  })
      return transport_->first_loss(e.peer(), e.what());
    else
      return {e.peer(), e.what()};
  }

  void fail(const collective_descriptor& d, const char* what) {
    broken_ = where(d) + what;
    transport_->abort();
  }

  //! Every rank sends its descriptor to every other (core/tags.hpp: argument_check)
  //! and compares all of them with rank 0's, so all ranks reach the same verdict and message.
  void agree(const collective_descriptor& mine, deadline until) {
    const int n = size(), me = rank();
    if (n == 1) return;
    descriptors_.resize(static_cast<std::size_t>(n));
    descriptors_[static_cast<std::size_t>(me)] = mine;
    transport::exchange_with_all(*transport_, tags::argument_check, std::span(descriptors_), until, requests_);
    enforce(mine, judge(descriptors_, me));
  }

  //! Throws what the ranks' agreement demands, the same on every rank.
  void enforce(const collective_descriptor& mine, const agreement& verdict) const {
    if (verdict.kind == agreement::mismatch) throw mismatch(where(mine) + verdict.message);
    if (verdict.kind == agreement::refused) throw invalid_argument(where(mine) + verdict.message);
  }

  std::unique_ptr<transport_type> owned_;
  transport_type* transport_;
  communicator_options options_;
  algorithm::scratch_buffer scratch_;
  algorithm::algorithm_state algorithm_state_;
  algorithm::phase_log* phase_log_ = nullptr;  //!< set by the engine's thread around its collectives
  algorithm::node_source nodes_;  //!< which node each rank is on: learnt at construction
  std::uint64_t sequence_ = 0;
  std::string broken_;  //!< non-empty once a collective failed midway: data may be partial
  std::vector<collective_descriptor> descriptors_;
  std::vector<typename transport_type::request> requests_;
  std::uint64_t engine_sequence_ = 0;  //!< the engine's collectives (its thread only)
  std::map<std::string, std::vector<float>> restored_feedback_;  //!< residuals given before the engine started
  detail::engine_slot<engine_type> engine_;  //!< last: stopped and joined before any member it uses goes
};

}  // namespace tutti
