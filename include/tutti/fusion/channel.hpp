//! @file channel.hpp  The negotiation's messages on the transport: reports to rank 0, its response to all.
//!
//! A message is its length (8 bytes) then its bytes (negotiation.hpp encodes them), under the
//! engine's own tags (core/tags.hpp: negotiation_request, negotiation_answer), between the
//! engine's collectives, when the transport is the engine's.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/tags.hpp"
#include "tutti/fusion/negotiation.hpp"

namespace tutti::fusion {

template <class Transport>
class negotiation_channel {
  using request = typename Transport::request;

 public:
  negotiation_channel(Transport& t, int world) : t_(t), world_(world) {}

  //! A rank other than 0: sends its report, returns rank 0's response.
  response ask(const report& mine, deadline until) {
    const auto bytes = encode(mine);
    send_message(0, tags::negotiation_request, bytes, until);
    return decode_response(recv_message(0, tags::negotiation_answer, until));
  }

  //! Rank 0: every other rank's report into all[1..). A lost peer is told to the others first, so
  //! they blame the rank that died, not rank 0 when it aborts.
  void gather(std::vector<report>& all, deadline until) {
    std::vector<std::uint64_t> lengths(static_cast<std::size_t>(world_));
    std::vector<std::vector<std::byte>> bodies(static_cast<std::size_t>(world_));
    try {
      std::vector<request> reqs;
      for (int r = 1; r < world_; ++r) reqs.push_back(t_.recv(r, tags::negotiation_request, &lengths[static_cast<std::size_t>(r)], 8));
      for (auto& q : reqs) t_.wait(q, until);
      reqs.clear();
      for (int r = 1; r < world_; ++r) {
        auto& b = bodies[static_cast<std::size_t>(r)];
        b.resize(lengths[static_cast<std::size_t>(r)]);
        reqs.push_back(t_.recv(r, tags::negotiation_request, b.data(), b.size()));
      }
      for (auto& q : reqs) t_.wait(q, until);
    } catch (const peer_lost& e) {
      tell_lost(e.peer());
      throw;
    }
    for (int r = 1; r < world_; ++r) all[static_cast<std::size_t>(r)] = decode_report(bodies[static_cast<std::size_t>(r)]);
  }

  //! Rank 0: the same response to every other rank.
  void answer(const response& decided, deadline until) { send_to_all(decided, -1, until); }

 private:
  //! Rank 0 lost `peer` while gathering reports: the others are waiting for its response, so it
  //! tells them who was lost (best effort, briefly) before it aborts.
  void tell_lost(int peer) noexcept {
    try {
      response last;
      last.stop = true;
      last.lost = peer;
      send_to_all(last, peer, deadline::after(std::chrono::seconds(2)));
    } catch (...) {
    }
  }

  void send_to_all(const response& r, int except, deadline until) {
    const auto bytes = encode(r);
    const std::uint64_t length = bytes.size();
    std::vector<request> reqs;
    for (int p = 1; p < world_; ++p) {
      if (p == except) continue;
      reqs.push_back(t_.send(p, tags::negotiation_answer, &length, 8));
      reqs.push_back(t_.send(p, tags::negotiation_answer, bytes.data(), bytes.size()));
    }
    for (auto& q : reqs) t_.wait(q, until);
  }

  void send_message(int peer, std::uint64_t tag, const std::vector<std::byte>& bytes, deadline until) {
    const std::uint64_t length = bytes.size();
    auto a = t_.send(peer, tag, &length, 8);
    auto b = t_.send(peer, tag, bytes.data(), bytes.size());
    t_.wait(a, until);
    t_.wait(b, until);
  }
  std::vector<std::byte> recv_message(int peer, std::uint64_t tag, deadline until) {
    std::uint64_t length = 0;
    auto a = t_.recv(peer, tag, &length, 8);
    t_.wait(a, until);
    if (length > (std::uint64_t{1} << 32)) throw transport_error("fusion negotiation: a message claims " + std::to_string(length) + " bytes");
    std::vector<std::byte> bytes(length);
    auto b = t_.recv(peer, tag, bytes.data(), bytes.size());
    t_.wait(b, until);
    return bytes;
  }

  Transport& t_;
  int world_;
};

}  // namespace tutti::fusion
