//! @file codec_communicators.hpp  The communicators behind the DDP communication hook: one per codec
//! a group's hook has asked for, each over its own transport of the group's kind, made on first use.
//!
//! A codec is a compile-time policy of a tutti communicator (communicator<Transport, Algorithm,
//! Codec>), so the hook's compressed allreduce runs on a second communicator, not on the group's.
//! Its transport is made the way the group's was (make_group.hpp passes the recipe): a fresh shm
//! job "<group's job>-<codec>" on one host, or multi_node in a new key scope of the group's tcp_store
//! across hosts. Making one is collective: it happens inside the group's worker at the first hook
//! call for that codec, which every rank reaches at the same point of its call sequence (the
//! worker runs calls in call order, the same on every rank). The algorithm is automatic: the
//! carrying schedule for lossy codecs on each transport (algorithm/compressed.hpp).
//!
//! Error feedback (topk, onebit): one residual per DDP bucket, by the bucket's index; a bucket
//! whose size changed (DDP rebuilds its buckets after the first iteration) starts a fresh one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include <tutti/tutti.hpp>

namespace tutti_torch {

//! One codec's allreduce, whatever the transport and codec types.
class codec_allreduce_base {
 public:
  virtual ~codec_allreduce_base() = default;
  //! In place: every rank's `data` becomes the average over ranks, through the codec.
  virtual void average(tutti::tensor_view data, std::int64_t bucket) = 0;
};

template <class Comm>
class codec_allreduce final : public codec_allreduce_base {
 public:
  explicit codec_allreduce(std::unique_ptr<Comm> comm) : comm_(std::move(comm)) {}
  void average(tutti::tensor_view data, std::int64_t bucket) override {
    if constexpr (tutti::feedback_codec_policy<typename Comm::codec_type>) {
      auto& slot = feedback_[bucket];
      if (!slot.residual().empty() && slot.residual().size() != data.count) slot.reset();  // rebuilt bucket
      comm_->allreduce(data, tutti::op::avg, slot);
    } else {
      comm_->allreduce(data, tutti::op::avg);
    }
  }

 private:
  std::unique_ptr<Comm> comm_;
  std::map<std::int64_t, tutti::error_feedback> feedback_;
};

//! The codecs the hook offers, by name, each made on first use from the group's transport recipe.
template <class Transport>
class codec_communicators {
 public:
  //! Makes a transport like the group's, distinct from it and from every other one made (`suffix`
  //! names it: the codec).
  using transport_recipe = std::function<std::unique_ptr<Transport>(const std::string& suffix)>;

  codec_communicators(transport_recipe recipe, tutti::communicator_options options)
      : recipe_(std::move(recipe)), options_(std::move(options)) {}

  //! The codec's allreduce, made now if it is the first call for it (collective: see the top).
  //! Unknown names are refused by the caller (known()), before any rank gets here.
  codec_allreduce_base& of(const std::string& codec) {
    auto& slot = made_[codec];
    if (!slot) {
      if (codec == "fp16") slot = make<tutti::codec::fp16>(codec);
      else if (codec == "bf16") slot = make<tutti::codec::bf16>(codec);
      else if (codec == "int8") slot = make<tutti::codec::int8>(codec);
      else if (codec == "topk") slot = make<tutti::codec::topk>(codec);
      else slot = make<tutti::codec::onebit>(codec);
    }
    return *slot;
  }

  [[nodiscard]] static bool known(const std::string& codec) {
    return codec == "fp16" || codec == "bf16" || codec == "int8" || codec == "topk" || codec == "onebit";
  }

 private:
  template <class Codec>
  std::unique_ptr<codec_allreduce_base> make(const std::string& name) {
    using comm_type = tutti::communicator<Transport, tutti::algorithm::automatic, Codec>;
    return std::make_unique<codec_allreduce<comm_type>>(std::make_unique<comm_type>(recipe_(name), options_));
  }

  transport_recipe recipe_;
  tutti::communicator_options options_;
  std::map<std::string, std::unique_ptr<codec_allreduce_base>> made_;
};

}  // namespace tutti_torch
