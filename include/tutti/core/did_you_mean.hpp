//! @file did_you_mean.hpp  "(did you mean 'optimizations'?)": the closest known word to a typo.
//!
//! Used for unknown keys of the experiment file (trainer/config/), hyperparameters that nothing
//! read, and unknown fields of a tuning table (tuner/table_json.hpp); plain text in, plain text
//! out, so it needs no YAML.
#pragma once
#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace tutti::spelling {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// neighbours each cost one, so "optimisations" and "learnig_rate" are one step from the real key.
[[nodiscard]] inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The candidate `word` is most likely a typo of, or "" when none is close: two edits, or a third of
// the shorter word if more, and fewer edits than its length, so "value" suggests "val" and
// "optimisations" "optimizations", but "colour" suggests nothing. Of equally close candidates the
// first wins.
[[nodiscard]] inline std::string closest(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const auto c : candidates) {
    const std::size_t d = edit_distance(word, c);
    const std::size_t shorter = std::min(word.size(), c.size());
    if (d < best_distance && d < shorter && d <= std::max<std::size_t>(2, shorter / 3)) {
      best = std::string(c);
      best_distance = d;
    }
  }
  return best;
}

// " (did you mean 'x'?)" or "".
[[nodiscard]] inline std::string suggestion(const std::string& best) {
  return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

}  // namespace tutti::spelling
