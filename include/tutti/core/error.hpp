//! @file error.hpp  The tutti::error hierarchy: every failure a user can see is one of these.
#pragma once
#include <exception>
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

//! The same kind of error with `prefix` before its message (peer_lost keeps its peer): for a layer
//! that learns which call a failure broke after the failure was made (the fusion engine's handles).
//! Anything that is not a tutti::error comes back unchanged.
[[nodiscard]] inline std::exception_ptr prefixed(std::exception_ptr e, const std::string& prefix) noexcept {
  if (!e) return e;
  try {
    try {
      std::rethrow_exception(e);
    } catch (const peer_lost& x) {
      return std::make_exception_ptr(peer_lost(x.peer(), prefix + x.what()));
    } catch (const invalid_argument& x) {
      return std::make_exception_ptr(invalid_argument(prefix + x.what()));
    } catch (const mismatch& x) {
      return std::make_exception_ptr(mismatch(prefix + x.what()));
    } catch (const timeout& x) {
      return std::make_exception_ptr(timeout(prefix + x.what()));
    } catch (const transport_error& x) {
      return std::make_exception_ptr(transport_error(prefix + x.what()));
    } catch (const error& x) {
      return std::make_exception_ptr(error(prefix + x.what()));
    }
  } catch (...) {
  }
  return e;
}

}  // namespace tutti
