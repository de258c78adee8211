# Defines tutti::tutti (always) and the optional tutti::ucx, tutti::nccl, tutti::cuda targets
# (only where their dependency is found), and the install/export rules.
if(POLICY CMP0167)
  cmake_policy(SET CMP0167 NEW)   # use Boost's own BoostConfig.cmake (FindBoost is deprecated)
endif()
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)   # header-only use: Hana

add_library(tutti INTERFACE)
add_library(tutti::tutti ALIAS tutti)
target_compile_features(tutti INTERFACE cxx_std_20)
target_include_directories(tutti INTERFACE
  $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(tutti INTERFACE Boost::boost Threads::Threads)
set_target_properties(tutti PROPERTIES EXPORT_NAME tutti)

# include/tutti/version.hpp must say what project(VERSION) says (conanfile.py reads the latter).
set(_tutti_version_header "${CMAKE_CURRENT_SOURCE_DIR}/include/tutti/version.hpp")
if(EXISTS "${_tutti_version_header}")
  file(STRINGS "${_tutti_version_header}" _tutti_version_lines
       REGEX "^#define TUTTI_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+")
  set(_tutti_header_version "")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX MATCH "TUTTI_VERSION_${_part} +([0-9]+)" _ "${_tutti_version_lines}")
    list(APPEND _tutti_header_version "${CMAKE_MATCH_1}")
  endforeach()
  list(JOIN _tutti_header_version "." _tutti_header_version)
  if(NOT _tutti_header_version STREQUAL PROJECT_VERSION)
    message(FATAL_ERROR "tutti: include/tutti/version.hpp says ${_tutti_header_version} but "
                        "CMakeLists.txt project(VERSION) says ${PROJECT_VERSION}; keep them equal")
  endif()
endif()

# Optional backends; GLOBAL so that a parent project using add_subdirectory(tutti) sees them.
set(TUTTI_OPTIONAL_TARGETS_GLOBAL ON)
include("${CMAKE_CURRENT_LIST_DIR}/tuttiOptionalDeps.cmake")
unset(TUTTI_OPTIONAL_TARGETS_GLOBAL)
set(_tutti_found "${TUTTI_OPTIONAL_BACKENDS_FOUND}")
set(_tutti_missing "${TUTTI_OPTIONAL_BACKENDS_NOT_FOUND}")
foreach(_v _tutti_found _tutti_missing)
  if(${_v})
    list(JOIN ${_v} " " ${_v})
  else()
    set(${_v} "(none)")
  endif()
endforeach()
message(STATUS "tutti ${PROJECT_VERSION}: optional backends found: ${_tutti_found}; not found: ${_tutti_missing}")

# --- install -----------------------------------------------------------------------------------
# Everything a consumer of the headers needs is in the component tutti_development; header-only,
# so the package lives under share/ (architecture independent).
include(CMakePackageConfigHelpers)
set(TUTTI_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATADIR}/cmake/tutti"
    CACHE STRING "Where tuttiConfig.cmake is installed, relative to the prefix")
mark_as_advanced(TUTTI_INSTALL_CMAKEDIR)

install(TARGETS tutti EXPORT tutti-targets COMPONENT tutti_development)
install(DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/include/tutti"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT tutti_development)
install(EXPORT tutti-targets NAMESPACE tutti:: FILE tutti-targets.cmake
        DESTINATION "${TUTTI_INSTALL_CMAKEDIR}" COMPONENT tutti_development)
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/tuttiConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/tuttiConfig.cmake"
  INSTALL_DESTINATION "${TUTTI_INSTALL_CMAKEDIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/tuttiConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMajorVersion ARCH_INDEPENDENT)
install(FILES "${PROJECT_BINARY_DIR}/tuttiConfig.cmake"
              "${PROJECT_BINARY_DIR}/tuttiConfigVersion.cmake"
              "${CMAKE_CURRENT_LIST_DIR}/tuttiOptionalDeps.cmake"
        DESTINATION "${TUTTI_INSTALL_CMAKEDIR}" COMPONENT tutti_development)
