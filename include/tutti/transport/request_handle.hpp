//! @file request_handle.hpp  The move-only handle transports return for a posted operation.
#pragma once
#include <utility>

namespace tutti::transport {

//! Points at a transport's record of one posted send or receive; empty once waited on (or tested
//! complete), and default-constructed empty, which counts as complete. Move-only, so one
//! operation cannot be waited on — and its record released — twice.
template <class State>
struct request_handle {
  State* op = nullptr;

  request_handle() = default;
  explicit request_handle(State* state) noexcept : op(state) {}
  request_handle(request_handle&& other) noexcept : op(std::exchange(other.op, nullptr)) {}
  request_handle& operator=(request_handle&& other) noexcept {
    op = std::exchange(other.op, nullptr);
    return *this;
  }
  request_handle(const request_handle&) = delete;
  request_handle& operator=(const request_handle&) = delete;
};

}  // namespace tutti::transport
