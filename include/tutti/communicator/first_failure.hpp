//! @file first_failure.hpp  The failure that left a communicator unusable, kept with its class.
#pragma once
#include <exception>
#include <string>

#include "tutti/core/error.hpp"

namespace tutti::detail {

//! A collective that fails midway leaves buffers partly written, so the communicator refuses every
//! later call. The refusal is the first failure again — the same class, the same peer — with the
//! refused call named before it: a caller that catches `peer_lost` to restart, or reads `peer()`
//! to say who died, must not get a plain `tutti::error` for the next collective it tries (the CI
//! soak found exactly that: the fusion engine lost rank 2, and the next blocking allreduce said so
//! only in words).
class first_failure {
 public:
  [[nodiscard]] bool empty() const noexcept { return !first_; }

  //! Keeps `failure` if it is the first; anything not a tutti::error is kept as one with `context`.
  void record(std::exception_ptr failure, const std::string& context) {
    if (first_ || !failure) return;
    try {
      std::rethrow_exception(failure);
    } catch (const error&) {
      first_ = failure;
    } catch (const std::exception& e) {
      first_ = std::make_exception_ptr(error(context + e.what()));
    } catch (...) {
      first_ = std::make_exception_ptr(error(context + "an exception that is not a std::exception"));
    }
  }

  //! Throws the first failure's class, its message after `where` and the refusal's words.
  [[noreturn]] void refuse(const std::string& where) const {
    std::rethrow_exception(prefixed(first_, where + "communicator is unusable after an earlier failure: "));
  }

 private:
  std::exception_ptr first_;
};

}  // namespace tutti::detail
