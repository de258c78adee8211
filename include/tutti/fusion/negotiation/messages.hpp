//! @file messages.hpp  The negotiation's two messages (a rank's report, rank 0's response) and their bytes.
//!
//! Both are written with core/wire.hpp in little-endian order (the same bytes as the host's order
//! on every machine tutti runs on, so a field is a memcpy): u32 counts and string lengths, u64
//! sizes, one byte per enum and flag. Every read is checked; a truncated or malformed message is a
//! transport_error naming the field and its offset, never a misread, and a count is checked against
//! the bytes that follow before anything is allocated for it. Both ends are the same build of tutti,
//! so the format has no version; docs/fusion.md walks through the protocol.
#pragma once
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tutti/core/dtype.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/wire.hpp"

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
  //! Joint tuning (fusion/joint.hpp): 0 lets the communicator's algorithm choose as it does for every
  //! call (algorithm::tuned: its table); k >= 1 runs candidate k - 1 for the engine's collectives.
  std::uint32_t algorithm = 0;
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
  std::int32_t stopped_by = -1;  //!< with stop: the first rank whose communicator was destroyed
  [[nodiscard]] bool carries_work() const noexcept { return !batches.empty() || !failures.empty() || !assignments.empty(); }
};

// ---- wire format ------------------------------------------------------------------------------------

namespace negotiation_wire {

inline constexpr std::endian byte_order = std::endian::little;
using writer = wire::writer<byte_order>;
using reader = wire::reader<byte_order>;

inline void put(writer& w, const tensor_meta& m) {
  w.put(static_cast<std::uint8_t>(m.type)).put(static_cast<std::uint8_t>(m.reduction)).put(static_cast<std::uint64_t>(m.count));
}
inline constexpr std::size_t meta_bytes = 1 + 1 + 8;

inline tensor_meta get_meta(reader& in) {
  const std::size_t at = in.offset();
  tensor_meta m;
  m.type = static_cast<dtype>(in.get<std::uint8_t>("a tensor's dtype"));
  m.reduction = static_cast<op>(in.get<std::uint8_t>("a tensor's op"));
  m.count = static_cast<std::size_t>(in.get<std::uint64_t>("a tensor's count"));
  if (!is_valid(m.type) || !is_valid(m.reduction))
    throw transport_error("fusion negotiation: a malformed tensor description at offset " + std::to_string(at));
  return m;
}

//! Runs `decode` over `bytes`; a short or malformed message becomes the transport_error it always was.
template <class Decode>
auto decode_or_refuse(std::span<const std::byte> bytes, std::string_view format, Decode decode) {
  reader in(bytes, format);
  try {
    return decode(in);
  } catch (const wire::malformed& e) {
    throw transport_error(e.what());
  }
}

}  // namespace negotiation_wire

inline std::vector<std::byte> encode(const report& r) {
  negotiation_wire::writer w;
  w.put(r.blocking_requested).put(static_cast<std::uint8_t>(r.stopping));
  w.put(static_cast<std::uint32_t>(r.cached.size()));
  for (auto word : r.cached) w.put(word);
  w.put(static_cast<std::uint32_t>(r.fresh.size()));
  for (const auto& [name, meta] : r.fresh) {
    w.prefixed(name);
    negotiation_wire::put(w, meta);
  }
  return std::move(w).take();
}

inline report decode_report(std::span<const std::byte> bytes) {
  using namespace negotiation_wire;
  return decode_or_refuse(bytes, "fusion negotiation: report", [](reader& in) {
    report r;
    r.blocking_requested = in.get<std::uint64_t>("the blocking count");
    r.stopping = in.get<std::uint8_t>("the stopping flag") != 0;
    r.cached.resize(in.count("the cached bit vector's length", wire::unbounded, 8));
    for (auto& word : r.cached) word = in.get<std::uint64_t>("a cached bit vector word");
    const auto n = in.count("the fresh name count", wire::unbounded, 4 + meta_bytes);
    r.fresh.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      auto name = in.string("a tensor name", wire::unbounded);
      r.fresh.emplace_back(std::move(name), get_meta(in));
    }
    in.expect_end("the report");
    return r;
  });
}

inline std::vector<std::byte> encode(const response& r) {
  negotiation_wire::writer w;
  w.put(r.grant_to).put(static_cast<std::uint8_t>(r.stop)).put(r.lost).put(r.stopped_by);
  w.put(static_cast<std::uint64_t>(r.params.threshold_bytes)).put(static_cast<std::int64_t>(r.params.cycle_time.count()));
  w.put(r.params.algorithm);
  w.put(static_cast<std::uint32_t>(r.assignments.size()));
  for (const auto& a : r.assignments) {
    w.put(a.id).prefixed(a.name);
    negotiation_wire::put(w, a.meta);
  }
  w.put(static_cast<std::uint32_t>(r.batches.size()));
  for (const auto& b : r.batches) {
    w.put(static_cast<std::uint32_t>(b.size()));
    for (auto id : b) w.put(id);
  }
  w.put(static_cast<std::uint32_t>(r.failures.size()));
  for (const auto& f : r.failures) w.put(static_cast<std::uint8_t>(f.kind)).prefixed(f.name).prefixed(f.message);
  return std::move(w).take();
}

inline response decode_response(std::span<const std::byte> bytes) {
  using namespace negotiation_wire;
  return decode_or_refuse(bytes, "fusion negotiation: response", [](reader& in) {
    response r;
    r.grant_to = in.get<std::uint64_t>("the blocking grant");
    r.stop = in.get<std::uint8_t>("the stop flag") != 0;
    r.lost = in.get<std::int32_t>("the lost rank");
    r.stopped_by = in.get<std::int32_t>("the stopping rank");
    r.params.threshold_bytes = static_cast<std::size_t>(in.get<std::uint64_t>("the fusion threshold"));
    r.params.cycle_time = std::chrono::microseconds(in.get<std::int64_t>("the cycle time"));
    r.params.algorithm = in.get<std::uint32_t>("the algorithm choice");
    r.assignments.resize(in.count("the assignment count", wire::unbounded, 4 + 4 + meta_bytes));
    for (auto& a : r.assignments) {
      a.id = in.get<std::uint32_t>("an assigned id");
      a.name = in.string("an assigned name", wire::unbounded);
      a.meta = get_meta(in);
    }
    r.batches.resize(in.count("the batch count", wire::unbounded, 4));
    for (auto& batch : r.batches) {
      batch.resize(in.count("a batch's length", wire::unbounded, 4));
      for (auto& id : batch) id = in.get<std::uint32_t>("a batched id");
    }
    r.failures.resize(in.count("the failure count", wire::unbounded, 1 + 4 + 4));
    for (auto& f : r.failures) {
      const auto at = in.offset();
      const auto kind = in.get<std::uint8_t>("a failure's kind");
      if (kind > static_cast<std::uint8_t>(failure_kind::stopped))
        throw transport_error("fusion negotiation: a malformed failure at offset " + std::to_string(at));
      f.kind = static_cast<failure_kind>(kind);
      f.name = in.string("a failed tensor's name", wire::unbounded);
      f.message = in.string("a failure's message", wire::unbounded);
    }
    in.expect_end("the response");
    return r;
  });
}

}  // namespace tutti::fusion
