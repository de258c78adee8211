//! @file tags.hpp  Every tag space tutti's own traffic uses, assigned here and nowhere else.
//!
//! A tag is what a transport matches a receive against. tutti's tags stay below 2^40 because
//! transport::ucx puts the source rank in the 24 bits above (`tags::bits`). The spaces, low to high:
//!   0                      the communicator's cross-rank argument check (collective descriptors)
//!   1, 2, ... < 2^38       blocking collectives: their sequence number on this communicator
//!   2^38, 2^38 + 1         the fusion engine's negotiation (requests to rank 0, answers from it)
//!   2^38 + 2               the fusion engine's start-up (every rank's settings, compared)
//!   2^38 + 3               the communicator's construction: every rank's node id hash (algorithm/node_map.hpp)
//!   2^38 + 4               the communicator's construction: the algorithm's prepare (algorithm/concepts.hpp);
//!                          algorithm::tuned sends every rank its tuning table's hash and source
//!   2^38 + 2^36 + t        point-to-point (communicator::send / recv), t the caller's tag (< 2^32)
//!   2^39 | n               the fusion engine's own collectives, n = 1, 2, ... (`fused_sequence_bit`)
//! A new space goes here, with a line above, so two never overlap.
#pragma once
#include <cstdint>

namespace tutti::tags {

inline constexpr int bits = 40;                                   //!< tutti tags are < 2^bits
inline constexpr std::uint64_t limit = std::uint64_t{1} << bits;  //!< first tag no transport must accept

inline constexpr std::uint64_t argument_check = 0;  //!< descriptors exchanged before data moves
inline constexpr std::uint64_t negotiation_request = std::uint64_t{1} << 38;   //!< engine: rank -> rank 0
inline constexpr std::uint64_t negotiation_answer = negotiation_request + 1;   //!< engine: rank 0 -> rank
inline constexpr std::uint64_t engine_start = negotiation_request + 2;         //!< engine settings check
inline constexpr std::uint64_t node_map = negotiation_request + 3;             //!< node ids, at construction
inline constexpr std::uint64_t tuning_table = negotiation_request + 4;         //!< prepare: tuned's table hashes
inline constexpr std::uint64_t point_to_point = negotiation_request + (std::uint64_t{1} << 36);  //!< + tag
inline constexpr std::uint64_t fused_sequence_bit = std::uint64_t{1} << 39;    //!< engine collectives

//! The tag of a collective: its sequence number, with `fused_sequence_bit` set for the engine's.
[[nodiscard]] constexpr bool is_fused(std::uint64_t sequence) noexcept { return (sequence & fused_sequence_bit) != 0; }
[[nodiscard]] constexpr std::uint64_t call_number(std::uint64_t sequence) noexcept { return sequence & ~fused_sequence_bit; }

static_assert(negotiation_request > (std::uint64_t{1} << 37) && tuning_table < point_to_point &&
              point_to_point + (std::uint64_t{1} << 32) < fused_sequence_bit && fused_sequence_bit < limit);

}  // namespace tutti::tags
