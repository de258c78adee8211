//! @file suite_sizes.hpp  The sizes every conformance suite (plain, compressed, error-feedback) runs at.
//!
//! The large count is a prime past every size threshold the suites meet: its messages are cut into
//! shared memory's 64 KiB fragments for every element size, and with the suites' pipeline chunk
//! (suite_chunk_bytes) every ring segment of floats is several chunks at every world size up to 9
//! (100,003 floats / 9 ranks = 44 KB, 5 chunks of 8 KiB). Until issue 18 the suites used 1,000,003
//! under the default 512 KiB chunk: ten times the bytes and most of CI's time, yet one chunk per
//! float segment at world 9. The 8 KiB chunk found a leak of send requests in ring's reduce that
//! the default chunk hid below 512 MiB.
#pragma once
#include <cstddef>
#include <cstdlib>

namespace tutti::testing {

inline constexpr std::size_t large_count = 100003;
inline constexpr const char* suite_chunk_bytes = "8192";

//! Sets TUTTI_CHUNK_BYTES for the ranks a suite starts, unless the caller chose a chunk already.
inline void use_suite_chunk() { ::setenv("TUTTI_CHUNK_BYTES", suite_chunk_bytes, 0); }

}  // namespace tutti::testing
