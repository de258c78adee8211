//! @file point_to_point.hpp  communicator::send / recv / wait: one tensor to or from one rank.
//!
//! What a framework's pipeline stages and torch.distributed's send/recv need beside the collectives.
//! A send or receive is posted at once (the transport's own non-blocking operation, in the tag
//! space tags::point_to_point + the caller's tag) and completed by wait(), which has the
//! communicator's deadline (or by test(), polled) and tells failures as a collective does: a lost peer is `peer_lost`
//! naming the rank lost first (first_loss.hpp), a deadline passed is `timeout`, and either leaves the
//! communicator unusable (first_failure.hpp), since the transport can withdraw a posted operation
//! only by aborting. Messages between two ranks with one tag match in posting order. Over shared
//! memory a rank's receives from one peer must also be posted in the order that peer sent them,
//! whatever their tags and collectives (transport::shm reads each peer's ring in order; UCX
//! matches by tag): in practice, both ranks issue their sends, receives and collectives in the same
//! program order, as NCCL requires too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "tutti/communicator/first_loss.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/tags.hpp"
#include "tutti/core/tensor_view.hpp"

namespace tutti {

//! A posted send or receive; complete it with communicator::wait (exactly once, before the
//! tensor's memory is reused or freed). Move-only, like the transport's request inside it.
template <class Transport>
struct p2p_request {
  typename Transport::request request;
  std::string what;  //!< "send to rank 1 (tag 7, 4096 bytes)": for the errors
  deadline until;
};

namespace detail {

//! The communicator's point-to-point, befriended like the fusion port (fusion_port.hpp).
template <class Communicator>
class point_to_point {
 public:
  using transport_type = typename Communicator::transport_type;
  using request = p2p_request<transport_type>;
  explicit point_to_point(Communicator& c) noexcept : c_(&c) {}

  [[nodiscard]] request send(const_tensor_view data, int peer, std::uint32_t tag) {
    auto r = start("send to", data.data, data.bytes(), peer, tag);
    r.request = c_->transport_->send(peer, tags::point_to_point + tag, data.data, data.bytes());
    return r;
  }
  [[nodiscard]] request recv(tensor_view data, int peer, std::uint32_t tag) {
    auto r = start("recv from", data.data, data.bytes(), peer, tag);
    r.request = c_->transport_->recv(peer, tags::point_to_point + tag, data.data, data.bytes());
    return r;
  }

  void wait(request& r) {
    guarded(r, [&] { c_->transport_->wait(r.request, r.until); });
  }
  //! Whether it completed, without waiting (a poller's wait: what the torch backend's worker does
  //! so that the operations queued behind this one are posted meanwhile); failures as wait's.
  [[nodiscard]] bool test(request& r) {
    bool done = false;
    guarded(r, [&] {
      done = c_->transport_->test(r.request);
      if (!done && r.until.passed()) throw timeout("");
    });
    return done;
  }

 private:
  template <class F>
  void guarded(request& r, F&& body) {
    const std::string where = on_rank(c_->rank()) + r.what + ": ";
    try {
      body();
    } catch (const peer_lost& e) {
      c_->fail(loss_error(*c_->transport_, e, where));
    } catch (const timeout& e) {
      const std::string transport_said = e.what();
      c_->fail(timeout(where + "not matched by the peer before the deadline (TUTTI_TIMEOUT)" +
                       (transport_said.empty() ? "" : ": " + transport_said)));
    } catch (const error& e) {
      c_->fail(transport_error(where + e.what()));
    }
  }

  request start(const char* verb, const void* data, std::size_t bytes, int peer, std::uint32_t tag) {
    std::string what = std::string(verb) + " rank " + std::to_string(peer) + " (tag " + std::to_string(tag) + ", " +
                       std::to_string(bytes) + " bytes)";
    const std::string where = on_rank(c_->rank()) + what + ": ";
    if (!c_->broken_.empty()) c_->broken_.refuse(where);
    if (peer < 0 || peer >= c_->size() || peer == c_->rank())
      throw invalid_argument(where + "the peer must be another rank of the " + std::to_string(c_->size()) +
                             (peer == c_->rank() ? " (a rank does not send to itself)" : ""));
    if (data == nullptr && bytes > 0) throw invalid_argument(where + "null buffer");
    if (c_->engine_.engine)  // the engine's thread uses the transport; only blocking collectives take turns with it
      throw invalid_argument(where + "point-to-point does not run beside the fusion engine (allreduce_async)");
    return {{}, std::move(what), deadline::after(c_->options_.timeout)};
  }

  Communicator* c_;
};

}  // namespace detail
}  // namespace tutti
