//! @file check_test.cpp  TUTTI_CUDA_CHECK's exception and device_count()'s reason, on the host (CUDA runtime linked, no GPU needed).
#include <doctest/doctest.h>

#if TUTTI_TEST_HAVE_CUDART
#include <string>

#include "tutti/cuda/check.hpp"
#include "tutti/cuda/device.hpp"

TEST_CASE("check: TUTTI_CUDA_CHECK throws tutti::cuda::cuda_error naming the call, file, line and CUDA's message") {
  CHECK_NOTHROW(TUTTI_CUDA_CHECK(cudaSuccess));
  const int line = __LINE__ + 2;
  try {
    TUTTI_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL("no exception");
  } catch (const tutti::cuda::cuda_error& e) {
    const std::string what = e.what();
    CHECK(e.code() == cudaErrorInvalidValue);
    CHECK(what.find("check_test.cpp:" + std::to_string(line) + ": cudaErrorInvalidValue failed: ") != std::string::npos);
    CHECK(what.find("cudaErrorInvalidValue: invalid argument") != std::string::npos);
  }
  CHECK_THROWS_AS(TUTTI_CUDA_CHECK(cudaErrorMemoryAllocation), tutti::error);  // the library's base class
}

TEST_CASE("check: device_count() gives a count, or 0 and the reason") {
  const auto r = tutti::cuda::device_count();
  MESSAGE("devices: ", r.count, r.reason.empty() ? "" : " (" + r.reason + ")");
  CHECK(r.count >= 0);
  CHECK((r.count > 0) == r.reason.empty());
  if (r.count == 0) CHECK(r.reason.find("cudaGetDeviceCount") != std::string::npos);
}
#else
TEST_CASE("check: TUTTI_CUDA_CHECK and device_count() need the CUDA runtime, which this build did not find" *
          doctest::skip()) {}
#endif
