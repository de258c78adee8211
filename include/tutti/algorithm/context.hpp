//! @file context.hpp  What an algorithm sees of its communicator during one collective.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tutti/algorithm/node_map.hpp"
#include "tutti/algorithm/phases.hpp"
#include "tutti/bootstrap/node.hpp"
#include "tutti/codec/concepts.hpp"
#include "tutti/codec/none.hpp"
#include "tutti/core/collective.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/reduce.hpp"
#include "tutti/tuner/overrides.hpp"

namespace tutti::algorithm {

//! A grow-only, 64-byte-aligned buffer owned by the communicator and reused by every collective,
//! so the hot path allocates only the first time a larger size is needed.
class scratch_buffer {
 public:
  [[nodiscard]] std::byte* get(std::size_t bytes) {
    if (bytes > size_) {
      const std::size_t rounded = (bytes + 4095) & ~std::size_t{4095};
      data_.reset(static_cast<std::byte*>(::operator new(rounded, std::align_val_t{64})));
      size_ = rounded;
    }
    return data_.get();
  }
  [[nodiscard]] std::size_t capacity() const noexcept { return size_; }

 private:
  struct aligned_delete {
    void operator()(std::byte* p) const noexcept { ::operator delete(p, std::align_val_t{64}); }
  };
  std::unique_ptr<std::byte, aligned_delete> data_;
  std::size_t size_ = 0;
};

//! State algorithms keep across the collectives of one communicator (e.g. hierarchical's node
//! grid and group transports), created on first use, one slot per state type: an algorithm's state
//! type is its own (hierarchical<I, X>::state<T>), so several stateful algorithms in one
//! communicator (tuned<A...> will be one) each keep theirs. One slot for all, as before issue 19,
//! handed the first algorithm's state to the second. The communicator owns one; each level of a
//! composition has its own (sub_slot), so a nested algorithm never finds its parent's.
class algorithm_state {
 public:
  //! The state of type S, made by `make()` (returning std::shared_ptr<S>) the first time.
  template <class S, class Make>
  S& get(Make&& make) {
    const std::type_index key(typeid(S));
    for (auto& [type, value] : slots_)  // a handful at most: a scan beats a hash
      if (type == key) return *static_cast<S*>(value.get());
    std::shared_ptr<S> made = make();
    S& result = *made;
    slots_.emplace_back(key, std::move(made));
    return result;
  }

 private:
  std::vector<std::pair<std::type_index, std::shared_ptr<void>>> slots_;
};

//! What a composing algorithm (hierarchical) keeps for each level it runs another algorithm on,
//! and hands to context::sub(): that level's scratch (apart from the caller's, which holds the
//! composer's own data), the state of the algorithms it runs there (their own slots: a nested
//! hierarchical's grid is not its parent's), and the part of the node map the level's ranks span.
struct sub_slot {
  scratch_buffer scratch;
  algorithm_state state;
  node_source nodes;
};

//! One collective's view: the transport, a tag unique to this collective, its deadline, scratch,
//! and the codec. Algorithms reach the transport only through this, so every wait carries the
//! deadline; and they reach the codec only through this, so a new codec never means editing a
//! schedule: "how many bytes on the wire for n elements" (wire_bytes), "encode this chunk",
//! "decode this wire chunk and reduce it into my accumulator" (reduce / decode_add), "decode into
//! the output". With codec::none these are the plain byte counts and tutti::reduce, inlined.
template <class Transport, class Codec = codec::none>
class context {
 public:
  using transport_type = Transport;
  using codec_type = Codec;
  using request = typename Transport::request;
  //! True when elements travel as they are; a lossy codec's allreduce takes its own schedule
  //! (algorithm/compressed.hpp), which quantises every element a bounded number of times.
  static constexpr bool lossless = Codec::lossless;

  context(Transport& t, scratch_buffer& s, std::uint64_t tag, deadline until, std::size_t chunk_bytes,
          const collective_descriptor* to_check = nullptr, std::vector<collective_descriptor>* peers = nullptr,
          algorithm_state* state = nullptr, const collective_descriptor* call = nullptr,
          node_source* nodes = nullptr) noexcept
      : transport_(t), scratch_(s), tag_(tag), until_(until), chunk_bytes_(chunk_bytes), to_check_(to_check),
        peers_(peers), state_(state), call_(call), nodes_(nodes) {}

  //! "rank r: allreduce #s: ", to begin an error an algorithm throws (names rank and collective).
  //! In a sub-context the rank named is the communicator's, not the group's.
  [[nodiscard]] std::string where() const {
    return call_ ? call_prefix(job_rank(), *call_) : on_rank(job_rank());
  }

  //! For algorithms that check arguments in their first synchronisation (`checks_arguments`): this
  //! rank's descriptor to publish, or null when checking is off or already done.
  [[nodiscard]] const collective_descriptor* descriptor() const noexcept { return to_check_; }
  //! The arguments are checked (algorithm::tuned ran its checker's agree): what runs next in this
  //! call sees no descriptor, and checks nothing again.
  void mark_checked() noexcept { to_check_ = nullptr; }
  //! Room for every rank's descriptor (reused across collectives).
  [[nodiscard]] std::span<collective_descriptor> descriptors() {
    peers_->resize(static_cast<std::size_t>(size()));
    return *peers_;
  }
  //! Judges all ranks' descriptors exactly as the communicator would; throws mismatch or
  //! invalid_argument with the same message on every rank.
  void verify(std::span<const collective_descriptor> all) const {
    const auto verdict = judge(all, rank());
    if (verdict.kind == agreement::agree) return;
    const std::string where = call_prefix(rank(), *to_check_);
    if (verdict.kind == agreement::mismatch) throw mismatch(where + verdict.message);
    throw invalid_argument(where + verdict.message);
  }

  [[nodiscard]] int rank() const noexcept { return transport_.rank(); }
  [[nodiscard]] int size() const noexcept { return transport_.world_size(); }
  [[nodiscard]] std::size_t chunk_bytes() const noexcept { return chunk_bytes_; }  //!< pipelining unit
  [[nodiscard]] std::byte* scratch(std::size_t bytes) { return scratch_.get(bytes); }
  [[nodiscard]] Transport& transport() noexcept { return transport_; }
  [[nodiscard]] deadline until() const noexcept { return until_; }  //!< for waits outside send/recv
  [[nodiscard]] std::uint64_t tag() const noexcept { return tag_; }
  //! The algorithm's state on this communicator (see algorithm_state); S is made by make() once.
  template <class S, class Make>
  S& state(Make&& make) {
    if (!state_) throw error(on_rank(job_rank()) + "this algorithm needs state, and its context has none");
    return state_->get<S>(std::forward<Make>(make));
  }

  //! Which node every rank of this context is on: the communicator's node map (algorithm/node_map.hpp,
  //! learnt when it was made), or in a sub-context the part of it the group spans.
  const node_map& nodes() const {
    if (!nodes_) throw error(where() + "this context has no node map");
    if (!nodes_->map) throw error(where() + "this communicator has no node map: " + nodes_->missing);
    return *nodes_->map;
  }

  //! A context for an algorithm that runs on `group` (a transport::group view of this context's
  //! transport, or another transport such as a node-aware one's node level) inside this
  //! collective: the same call (for messages), tag, deadline, pipelining unit and tuning; the
  //! slot's scratch, state and node map (the part of this one the group spans, which the caller
  //! puts there). SubCodec: what the sub-collective's elements become on the wire (hierarchical
  //! keeps codec::none inside nodes). It never checks arguments (the caller did) and never
  //! records phases (only the top-level context does).
  template <class SubCodec = Codec, class Group>
  [[nodiscard]] context<Group, SubCodec> sub(Group& group, sub_slot& slot) const noexcept {
    context<Group, SubCodec> s(group, slot.scratch, tag_, until_, chunk_bytes_, nullptr, nullptr, &slot.state, call_,
                               &slot.nodes);
    s.job_rank_ = job_rank();
    s.tuning_ = tuning_;
    return s;
  }

  //! The tuning values an algorithm runs with (tuner/): the ones `set_tuning` gave for this call
  //! (tuned<...> will), else Tuning's defaults. One test of a null pointer when none were given.
  template <class Tuning>
  [[nodiscard]] const Tuning& tuning() const noexcept {
    if (tuning_)
      if (const Tuning* chosen = tuning_->template find<Tuning>()) return *chosen;
    return tuner::defaults<Tuning>;
  }
  void set_tuning(const tuner::overrides* chosen) noexcept { tuning_ = chosen; }
  [[nodiscard]] const tuner::overrides* tuning_overrides() const noexcept { return tuning_; }  //!< what set_tuning gave

  // ---- the codec seam ------------------------------------------------------------------------
  //! Bytes on the wire for n elements of t.
  [[nodiscard]] static constexpr std::size_t wire_bytes(dtype t, std::size_t n) noexcept {
    return Codec::encoded_bytes(t, n);
  }
  //! out[i] = mine[i] o wire[i] where the wire holds the elements themselves: codec::none, and the
  //! collectives a lossy codec does not apply to (only allreduce is compressed; docs/compression.md).
  static void reduce(dtype t, op o, void* out, const void* mine, const void* wire, std::size_t n) {
    tutti::reduce(t, o, out, mine, wire, n);
  }
  //! Lossy codecs (codec::lossy_codec_policy): fp32 in, wire bytes out, scaled first.
  static void encode(const float* in, std::size_t n, float scale, std::byte* wire) noexcept
    requires lossy_codec_policy<Codec>
  {
    Codec::encode(in, n, scale, wire);
  }
  //! Codecs with error feedback (codec::feedback_codec_policy): v = in * scale + residual is
  //! encoded and `residual` keeps what was not sent.
  static void encode(const float* in, std::size_t n, float scale, float* residual, std::byte* wire)
    requires feedback_codec_policy<Codec>
  {
    Codec::encode(in, n, scale, residual, wire);
  }
  //! This rank's error-feedback residual for the collective's elements (the caller's
  //! tutti::error_feedback), or null.
  [[nodiscard]] float* residual() const noexcept { return residual_; }
  void set_residual(float* r) noexcept { residual_ = r; }
  static void decode(const std::byte* wire, std::size_t n, float* out) noexcept
    requires(!Codec::lossless)
  {
    Codec::decode(wire, n, out);
  }
  //! acc[i] += decoded wire[i], in fp32: a receiver never keeps a running sum in the wire format.
  static void decode_add(const std::byte* wire, std::size_t n, float* acc) noexcept
    requires(!Codec::lossless)
  {
    Codec::decode_add(wire, n, acc);
  }
  //! Elements per independently scaled codec block: schedules cut messages at its multiples.
  static constexpr std::size_t granule = codec_granule<Codec>();
  //! A factor every rank's contribution is multiplied by before it is encoded. hierarchical sets
  //! it to 1/world on its inter-node context for avg, where the inter-node sum is only part of the
  //! job's: scaling before encoding keeps fp16 from overflowing on the sum.
  [[nodiscard]] float prescale() const noexcept { return prescale_; }
  void set_prescale(float s) noexcept { prescale_ = s; }

  // ---- phases, for the timeline ----------------------------------------------------------------
  //! Marks the start of a phase of the schedule (a string literal: "REDUCE_SCATTER", "ALLGATHER").
  //! Costs one test of a null pointer unless the fusion engine's timeline is recording (TUTTI_TIMELINE).
  void phase(std::string_view name) {
    if (phases_) phases_->begin(name);
  }
  void set_phase_log(phase_log* p) noexcept { phases_ = p; }

  [[nodiscard]] request send(int peer, const void* data, std::size_t bytes) { return transport_.send(peer, tag_, data, bytes); }
  [[nodiscard]] request recv(int peer, void* data, std::size_t bytes) { return transport_.recv(peer, tag_, data, bytes); }
  void wait(request& r) { transport_.wait(r, until_); }
  //! `c.wait(c.send(...))`: post and wait in one expression, for a message that nothing overlaps.
  void wait(request&& r) { transport_.wait(r, until_); }

 private:
  Transport& transport_;
  scratch_buffer& scratch_;
  std::uint64_t tag_;
  deadline until_;
  std::size_t chunk_bytes_;
  const collective_descriptor* to_check_;
  std::vector<collective_descriptor>* peers_;
  algorithm_state* state_;
  const collective_descriptor* call_;
  node_source* nodes_;
  float prescale_ = 1.0f;
  float* residual_ = nullptr;
  phase_log* phases_ = nullptr;  //!< only the top-level context records: sub-contexts never get one
  const tuner::overrides* tuning_ = nullptr;
  int job_rank_ = -1;  //!< in a sub-context: the communicator's rank, for messages

  [[nodiscard]] int job_rank() const noexcept { return job_rank_ >= 0 ? job_rank_ : rank(); }

  template <class, class>
  friend class context;  // sub() sets a sub-context's job rank and tuning
};

}  // namespace tutti::algorithm
