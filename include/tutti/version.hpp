//! @file
//! tutti's version, kept equal to project(VERSION) in CMakeLists.txt (configure checks it).
#pragma once

#define TUTTI_VERSION_MAJOR 0
#define TUTTI_VERSION_MINOR 1
#define TUTTI_VERSION_PATCH 0

namespace tutti {
inline constexpr const char* version = "0.1.0";
}  // namespace tutti
