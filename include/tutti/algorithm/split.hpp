//! @file split.hpp  How a buffer is cut into one segment per rank and each segment into chunks.
#pragma once
#include <algorithm>
#include <cstddef>

namespace tutti::algorithm {

//! `total` elements cut into `parts` contiguous segments whose lengths differ by at most one
//! (the first total % parts segments are one longer). With total = parts * k every segment is k.
struct split {
  std::size_t total;
  std::size_t parts;

  [[nodiscard]] std::size_t length(std::size_t i) const noexcept { return total / parts + (i < total % parts ? 1 : 0); }
  [[nodiscard]] std::size_t offset(std::size_t i) const noexcept {
    return i * (total / parts) + std::min(i, total % parts);
  }
  //! Number of chunk rounds needed when each segment is sent `chunk` elements at a time.
  [[nodiscard]] std::size_t rounds(std::size_t chunk) const noexcept { return (length(0) + chunk - 1) / chunk; }

  //! Element range [first, first+count) of round j's chunk of segment i (count may be 0).
  struct range {
    std::size_t first;
    std::size_t count;
  };
  [[nodiscard]] range chunk(std::size_t i, std::size_t j, std::size_t chunk) const noexcept {
    const std::size_t len = length(i);
    const std::size_t begin = std::min(len, j * chunk);
    return {offset(i) + begin, std::min(len, begin + chunk) - begin};
  }
};

}  // namespace tutti::algorithm
