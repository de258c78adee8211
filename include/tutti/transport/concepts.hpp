//! @file concepts.hpp  The Transport concept: what a class must offer to carry tutti's bytes.
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>

#include "tutti/core/deadline.hpp"
#include "tutti/core/policy.hpp"

namespace tutti {

//! Capabilities a transport advertises; algorithms and tests read the same traits.
//! Every field defaults to false: a transport specialises what it really offers.
struct transport_traits {
  bool intra_node = false;     //!< all peers share this host's memory
  bool device_memory = false;  //!< buffers may live in GPU memory
  bool one_sided = false;      //!< a peer's staging memory can be mapped and read directly
};

/// A Transport moves bytes between two ranks of one job.
///  - `send(peer, tag, data, bytes)` / `recv(peer, tag, data, bytes)` start a transfer and return a
///    `request` at once; messages between one pair of ranks with one tag match in posting order.
///    The buffer must stay valid and untouched until the request completes.
///  - `test(req)` says whether it completed; `wait(req, deadline)` blocks until it does, throwing
///    tutti::timeout at the deadline and tutti::peer_lost when the peer is gone.
///  - a default-constructed `request` is already complete (waiting on it returns at once).
///  - `abort()` withdraws every pending operation (their buffers are never touched again) and
///    makes peers' waits on this rank fail with peer_lost; the transport is unusable afterwards.
///  - `traits` is a constexpr transport_traits.
template <class T>
concept transport_policy =
    std::same_as<typename T::tutti_role, role::transport> &&
    requires(T& t, const T& ct, int peer, std::uint64_t tag, const void* in, void* out, std::size_t n,
             typename T::request& req, deadline until) {
      typename T::request;
      { ct.rank() } -> std::convertible_to<int>;
      { ct.world_size() } -> std::convertible_to<int>;
      { t.send(peer, tag, in, n) } -> std::same_as<typename T::request>;
      { t.recv(peer, tag, out, n) } -> std::same_as<typename T::request>;
      { t.test(req) } -> std::same_as<bool>;
      { t.wait(req, until) } -> std::same_as<void>;
      { t.abort() } noexcept;
      requires std::default_initializable<typename T::request>;
      { T::traits } -> std::convertible_to<transport_traits>;
    };

/// A Transport that can also take a message shorter than the receive buffer: what a fixed-size
/// exchange needs when the sender knows its size and the receiver only a bound (algorithm::eager's
/// frames: a rank sends its descriptor and data, 40 bytes for an 8-byte allreduce, not the frame).
///  - `recv_up_to(peer, tag, data, capacity, arrived)`: recv that matches a message of at most
///    `capacity` bytes; once the request completes, `*arrived` holds its size. A longer message
///    is the same error as recv's.
template <class T>
concept sized_receive_transport =
    transport_policy<T> && requires(T& t, int peer, std::uint64_t tag, void* out, std::size_t n, std::size_t* arrived) {
      { t.recv_up_to(peer, tag, out, n, arrived) } -> std::same_as<typename T::request>;
    };

/// A Transport whose traits.one_sided is true also lets a rank read peers' memory directly:
/// staging buffers and a registered region of every rank are mapped in every process, and ranks
/// synchronise through per-rank signal words holding rising epoch numbers.
///  - `segment_base(r)`: rank r's shared memory as mapped here; offsets published by r are relative to it
///  - `stage(r, parity)`, `stage_bytes()`: rank r's two staging buffers
///  - `registered_offset(p, bytes)`: where [p, p+bytes) lies in this rank's shared memory, or
///    `not_registered` (memory from `allocate()` is registered)
///  - `next_epoch()`: the same number on every rank for the same step
///  - `signal(slot, epoch, offset[, payload, bytes])` / `wait_signal(r, slot, epoch, deadline)` -> offset;
///    `payload(r, epoch)`: what r published with slot 0 (at most `max_payload` bytes)
template <class T>
concept one_sided_transport =
    transport_policy<T> && T::traits.one_sided &&
    requires(T& t, const T& ct, int r, unsigned u, std::uint64_t v, deadline until, const void* p, std::size_t n) {
      { ct.segment_base(r) } -> std::same_as<std::byte*>;
      { ct.stage(r, u) } -> std::same_as<std::byte*>;
      { ct.stage_bytes() } -> std::convertible_to<std::size_t>;
      { ct.registered_offset(p, n) } -> std::convertible_to<std::size_t>;
      { T::not_registered } -> std::convertible_to<std::size_t>;
      { t.next_epoch() } -> std::convertible_to<std::uint64_t>;
      { t.signal(u, v, v) };
      { t.signal(u, v, v, p, n) };
      { ct.payload(r, v) } -> std::same_as<const std::byte*>;
      { T::max_payload } -> std::convertible_to<std::size_t>;
      { t.wait_signal(r, u, v, until) } -> std::convertible_to<std::uint64_t>;
    };

}  // namespace tutti
