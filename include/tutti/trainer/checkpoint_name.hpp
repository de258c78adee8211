//! @file checkpoint_name.hpp  What checkpoint files are called: `ckpt-<batches>`, `feedback-<batches>.rank<r>`.
//!
//! The one place that writes a checkpoint's file name and reads the batch count back out of one.
//! Batches are 12 zero-padded digits, so names sort as numbers do and a stranger (a leftover
//! `.tmp.<pid>` of an interrupted commit, a file a person put there) is never taken for one.
//! Beside the chief's `ckpt-000000000120` each rank of a run with an error-feedback codec keeps its
//! residuals in `feedback-000000000120.rank<r>`.
#pragma once
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "tutti/core/error.hpp"

namespace tutti::trainer {

namespace detail {

inline constexpr std::string_view checkpoint_prefix = "ckpt-";
inline constexpr std::string_view feedback_prefix = "feedback-";
inline constexpr std::size_t checkpoint_digits = 12;

//! `batches` as the 12 digits of a name: "000000000120".
[[nodiscard]] inline std::string batch_digits(std::size_t batches) {
  std::string digits = std::to_string(batches);
  if (digits.size() > checkpoint_digits)
    throw invalid_argument("checkpoint_path(dir, " + digits + "): batch counts have at most 12 digits");
  digits.insert(0, checkpoint_digits - digits.size(), '0');
  return digits;
}

//! ".rank3": the end of rank 3's feedback file.
[[nodiscard]] inline std::string rank_suffix(int rank) { return ".rank" + std::to_string(rank); }

//! `<prefix><12 digits><suffix>` -> the digits' value; any other name -> nullopt.
[[nodiscard]] inline std::optional<std::size_t> batches_in(std::string_view filename, std::string_view prefix,
                                                           std::string_view suffix = {}) {
  if (filename.size() != prefix.size() + checkpoint_digits + suffix.size() || !filename.starts_with(prefix) ||
      !filename.ends_with(suffix))
    return std::nullopt;
  std::size_t n = 0;
  for (const char c : filename.substr(prefix.size(), checkpoint_digits)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  return n;
}

//! `ckpt-<12 digits>` -> the digits' value; anything else (a `.tmp.<pid>`, a stranger) -> nullopt.
[[nodiscard]] inline std::optional<std::size_t> checkpoint_batches(std::string_view filename) {
  return batches_in(filename, checkpoint_prefix);
}

//! `feedback-<12 digits>.rank<rank>` -> the digits' value; another rank's file, or anything else -> nullopt.
[[nodiscard]] inline std::optional<std::size_t> feedback_batches(std::string_view filename, int rank) {
  return batches_in(filename, feedback_prefix, rank_suffix(rank));
}

//! The regular files of `dir` whose name `batches_of` reads a batch count from, most batches first.
template <class BatchesOf>
[[nodiscard]] std::vector<std::pair<std::size_t, std::filesystem::path>> list_named(const std::filesystem::path& dir,
                                                                                    BatchesOf batches_of) {
  std::vector<std::pair<std::size_t, std::filesystem::path>> found;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec), end;
  if (ec) throw error("checkpoint directory " + dir.string() + ": cannot list it: " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) throw error("checkpoint directory " + dir.string() + ": cannot list it: " + ec.message());
    if (auto n = batches_of(it->path().filename().string()); n && it->is_regular_file(ec))
      found.emplace_back(*n, it->path());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return found;
}

//! The checkpoint files of `dir`, newest (most batches) first.
[[nodiscard]] inline std::vector<std::pair<std::size_t, std::filesystem::path>> list_checkpoints(
    const std::filesystem::path& dir) {
  return list_named(dir, checkpoint_batches);
}

//! Rank `rank`'s feedback files in `dir`, newest first.
[[nodiscard]] inline std::vector<std::pair<std::size_t, std::filesystem::path>> list_feedback(
    const std::filesystem::path& dir, int rank) {
  return list_named(dir, [rank](std::string_view name) { return feedback_batches(name, rank); });
}

}  // namespace detail

//! The file a checkpoint after `batches` global batches goes to: `dir/ckpt-000000000120`.
[[nodiscard]] inline std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::size_t batches) {
  return dir / (std::string(detail::checkpoint_prefix) + detail::batch_digits(batches));
}

//! Where rank `rank` keeps its error-feedback residuals beside that checkpoint:
//! `dir/feedback-000000000120.rank3`.
[[nodiscard]] inline std::filesystem::path feedback_path(const std::filesystem::path& dir, std::size_t batches,
                                                         int rank) {
  return dir / (std::string(detail::feedback_prefix) + detail::batch_digits(batches) + detail::rank_suffix(rank));
}

}  // namespace tutti::trainer
