//! @file error.hpp  The tutti::error hierarchy: every failure a user can see is one of these.
#pragma once
#include <stdexcept>
#include <string>

namespace tutti {

//! Base of everything tutti throws. Messages name the rank, the collective and the offending value.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

//! An argument is wrong on this rank (null buffer with a non-zero count, a bad root, a bad config value).
class invalid_argument : public error {
 public:
  using error::error;
};

//! Ranks disagree: different counts, dtypes, ops, roots or collectives entered together.
class mismatch : public error {
 public:
  using error::error;
};

//! A wait passed its deadline (TUTTI_TIMEOUT).
class timeout : public error {
 public:
  using error::error;
};

//! A peer died or left while this rank was waiting on it.
class peer_lost : public error {
 public:
  peer_lost(int peer, const std::string& what) : error(what), peer_(peer) {}
  [[nodiscard]] int peer() const noexcept { return peer_; }  //!< the rank that was lost

 private:
  int peer_;
};

//! The transport failed for a reason that is not one of the above (a system call, a library error).
class transport_error : public error {
 public:
  using error::error;
};

}  // namespace tutti
