//! @file concepts.hpp  What data_parallel_trainer asks of its communicator and its optimiser.
//!
//! Exactly the calls the trainer makes, no more: a communicator other than tutti::communicator
//! (a wrapper that counts bytes, a test double) fits if it has them. A type that does not fit is
//! refused at compile time with one sentence naming the first thing it lacks, not with the pages
//! of a failed call deep inside fit(). The optimiser's concepts (`trainer_optimizer`, and
//! `optimizer`, what lars<Inner> wraps) are in optimizer/concepts.hpp, included here.
#pragma once
#include <concepts>
#include <cstdint>
#include <istream>
#include <map>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tutti/codec/concepts.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/core/tensor_view.hpp"
#include "tutti/fusion/handle.hpp"
#include "tutti/trainer/model.hpp"
#include "tutti/trainer/optimizer/concepts.hpp"

namespace tutti::trainer {

namespace concepts_detail {

// One concept per thing the trainer calls, so a refusal can name the one that is missing.

template <class C>
concept has_rank_and_size = requires(const C& c) {
  { c.rank() } -> std::convertible_to<int>;
  { c.size() } -> std::convertible_to<int>;
};

template <class C>
concept has_codec_type = requires { typename C::codec_type; };

//! Each gradient, handed to the fusion engine as backward produces it.
template <class C>
concept has_allreduce_async = requires(C& c, std::string name, tensor_view grad, fusion::completion::callback done) {
  { c.allreduce_async(name, grad, op::avg, done) } -> std::convertible_to<fusion::handle>;
};

//! The chief's initial parameters.
template <class C>
concept has_broadcast = requires(C& c, tensor_view values) { c.broadcast(values, 0); };

//! Metrics (summed in rank order, so every slot gets the same bits) and their names' hashes.
template <class C>
concept has_allgather = requires(C& c, const std::vector<double>& metrics, std::vector<double>& all_metrics,
                                 const std::vector<std::uint64_t>& hash, std::vector<std::uint64_t>& all_hashes) {
  c.allgather(metrics, all_metrics);
  c.allgather(hash, all_hashes);
};

//! Every rank waits for the checkpoint to be written.
template <class C>
concept has_barrier = requires(C& c) { c.barrier(); };

//! With an error-feedback codec, the residuals a checkpoint saves and a resume restores.
template <class C>
concept has_feedback_state = requires(C& c, std::map<std::string, std::vector<float>> state) {
  { c.fusion_feedback_state() } -> std::convertible_to<std::map<std::string, std::vector<float>>>;
  c.restore_fusion_feedback(std::move(state));
};

template <class C>
constexpr bool feedback_codec_of() {
  if constexpr (has_codec_type<C>) return feedback_codec_policy<typename C::codec_type>;
  else return false;
}

}  // namespace concepts_detail

//! The trainer's Communicator: rank() and size(); allreduce_async for gradients, broadcast of the
//! initial parameters, allgather of metrics, barrier around checkpoints; its codec_type, and with
//! an error-feedback codec the residuals (fusion_feedback_state, restore_fusion_feedback).
template <class C>
concept trainer_communicator =
    concepts_detail::has_rank_and_size<C> && concepts_detail::has_codec_type<C> &&
    concepts_detail::has_allreduce_async<C> && concepts_detail::has_broadcast<C> && concepts_detail::has_allgather<C> &&
    concepts_detail::has_barrier<C> &&
    (!concepts_detail::feedback_codec_of<C>() || concepts_detail::has_feedback_state<C>);

namespace concepts_detail {

#define TUTTI_TRAINER_REQUIRES "tutti::trainer::data_parallel_trainer<Communicator, Model, Optimizer> requires "

//! true, or the one sentence that names the first thing Communicator lacks.
template <class C>
consteval bool check_communicator() {
  if constexpr (!has_rank_and_size<C>)
    static_assert(dependent_false<C>, TUTTI_TRAINER_REQUIRES "Communicator to have rank() and size()");
  else if constexpr (!has_codec_type<C>)
    static_assert(dependent_false<C>, TUTTI_TRAINER_REQUIRES "Communicator to name its codec (Communicator::codec_type)");
  else if constexpr (!has_allreduce_async<C>)
    static_assert(dependent_false<C>, TUTTI_TRAINER_REQUIRES "Communicator to have allreduce_async(name, tensor_view, "
                                      "op, callback) returning a tutti::fusion::handle");
  else if constexpr (!has_broadcast<C>)
    static_assert(dependent_false<C>, TUTTI_TRAINER_REQUIRES "Communicator to have broadcast(tensor_view, root)");
  else if constexpr (!has_allgather<C>)
    static_assert(dependent_false<C>, TUTTI_TRAINER_REQUIRES "Communicator to have allgather(in, out) of std::vector<"
                                      "double> and of std::vector<std::uint64_t>");
  else if constexpr (!has_barrier<C>)
    static_assert(dependent_false<C>, TUTTI_TRAINER_REQUIRES "Communicator to have barrier()");
  else if constexpr (feedback_codec_of<C>() && !has_feedback_state<C>)
    static_assert(dependent_false<C>, TUTTI_TRAINER_REQUIRES "Communicator, whose codec keeps error feedback, to have "
                                      "fusion_feedback_state() and restore_fusion_feedback(state) for checkpoints");
  return true;
}

//! true, or the one sentence that names the first thing Optimizer lacks.
template <class O>
consteval bool check_optimizer() {
  if constexpr (!requires(O& o, std::span<const parameter> params, double lr) { o.step(params, lr); })
    static_assert(dependent_false<O>, TUTTI_TRAINER_REQUIRES "Optimizer to have step(std::span<const "
                                      "tutti::trainer::parameter>, double lr)");
  else if constexpr (!requires(O& o, std::ostream& out, std::istream& in) {
                       o.save(out);
                       o.load(in);
                     })
    static_assert(dependent_false<O>, TUTTI_TRAINER_REQUIRES "Optimizer to have save(std::ostream&) and "
                                      "load(std::istream&) for checkpoints");
  return true;
}

#undef TUTTI_TRAINER_REQUIRES

}  // namespace concepts_detail

}  // namespace tutti::trainer
