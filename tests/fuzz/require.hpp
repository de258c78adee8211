//! @file require.hpp  The fuzz targets' assertion: a failed property stops libFuzzer as a crash
//! (__builtin_trap), which it reports with the input that broke it.
#pragma once

namespace tutti_fuzz {

inline void require(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace tutti_fuzz
