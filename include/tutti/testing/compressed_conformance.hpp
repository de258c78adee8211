//! @file compressed_conformance.hpp  The allreduce conformance suite for lossy codecs: every
//! element of every rank's result against the fp32 reference, within the written bound.
//!
//! Instantiate with TEST_CASE_TEMPLATE_INVOKE(compressed_allreduce_conformance,
//! your_world<your_algorithm, layout, codec::fp16>). For world sizes 1-9 and counts 0, 1, 7, 1009
//! and 100,003 (suite_sizes.hpp), sum and avg, in place and out of place, each element k must satisfy
//!
//!   |out[k] - y[k]| <= sum_i E(x_i[k] s, B_i) + (n + 2) u sum_i (|x_i[k] s| + E_i) + E(|y[k]| + d, B_y + d)
//!
//! where y = sum_i x_i s in exact arithmetic (s = 1/n for avg), E(v, B) is the codec's own
//! one-round-trip bound (Codec::max_error) at value v with block maximum B (B_i: the largest |x_i s|
//! of k's codec block, blocks aligned to multiples of the codec's granule), u = 2^-24, d the first
//! two terms (how far the fp32 sum the owner encodes can be from y) and B_y the largest |y| of k's
//! block. In words: every contribution is encoded once, summed in fp32, and the sum encoded once
//! (algorithm/compressed.hpp); a schedule that re-encodes partial sums at every hop, a codec that
//! truncates instead of rounding, or a 16-bit running sum exceeds it (tests/codec prove both).
//! Also checked: every rank holds the same bits, the input of an out-of-place call is untouched,
//! nothing is written outside the output.
#pragma once
#include <doctest/doctest.h>

#include <tutti/testing/suite_sizes.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <vector>

#include <tutti/codec/concepts.hpp>
#include <tutti/core/tensor_view.hpp>
#include <tutti/testing/conformance.hpp>

namespace tutti::testing {

inline const std::vector<std::size_t>& compressed_counts() {
  static const std::vector<std::size_t> counts = {0, 1, 7, 1009, large_count};
  return counts;
}

//! Rank r's element i: gradient-like, both signs, magnitudes from 2^-12 to 2^6, some zeros, a
//! function of (r, i) alone so every rank and the checker agree without communicating.
inline float gradient_value(int r, std::size_t i) {
  std::uint64_t h = (static_cast<std::uint64_t>(r) + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xBF58476D1CE4E5B9ull);
  h ^= h >> 31;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 29;
  if ((h & 31) == 0) return 0.0f;
  const int exponent = static_cast<int>((h >> 8) % 19) - 12;  // 2^-12 .. 2^6
  const float mantissa = 1.0f + static_cast<float>((h >> 16) & 0xFFFFFF) * 0x1p-24f;
  return ((h >> 5) & 1 ? -1.0f : 1.0f) * std::ldexp(mantissa, exponent);
}

//! What every rank's output must be close to, and how close, for one (world, count, op).
struct compressed_expectation {
  std::vector<double> reference;
  std::vector<float> bound;
};

template <class Codec>
compressed_expectation expect_compressed(int n, std::size_t count, op o) {
  constexpr std::size_t g = codec_granule<Codec>();
  const double s = o == op::avg ? 1.0 / n : 1.0;
  compressed_expectation e{std::vector<double>(count, 0.0), std::vector<float>(count, 0.0f)};
  std::vector<double> magnitude(count, 0.0), encoding(count, 0.0);
  std::vector<float> scaled(g);
  for (int r = 0; r < n; ++r) {
    for (std::size_t first = 0; first < count; first += g) {
      const std::size_t m = std::min(g, count - first);
      float block_max = 0;
      for (std::size_t j = 0; j < m; ++j) {
        scaled[j] = static_cast<float>(gradient_value(r, first + j) * s);
        block_max = std::max(block_max, std::fabs(scaled[j]));
      }
      for (std::size_t j = 0; j < m; ++j) {
        const double x = static_cast<double>(gradient_value(r, first + j)) * s;
        e.reference[first + j] += x;
        magnitude[first + j] += std::fabs(x);
        encoding[first + j] += Codec::max_error(scaled[j], block_max);
      }
    }
  }
  const double u = 0x1p-24;
  std::vector<double> drift(count);
  for (std::size_t k = 0; k < count; ++k) drift[k] = encoding[k] + (n + 2) * u * (magnitude[k] + encoding[k]);
  for (std::size_t first = 0; first < count; first += g) {
    const std::size_t m = std::min(g, count - first);
    double block_max = 0, block_drift = 0;
    for (std::size_t j = 0; j < m; ++j) {
      block_max = std::max(block_max, std::fabs(e.reference[first + j]));
      block_drift = std::max(block_drift, drift[first + j]);
    }
    for (std::size_t j = 0; j < m; ++j) {
      const std::size_t k = first + j;
      const double out = Codec::max_error(static_cast<float>(std::fabs(e.reference[k]) + drift[k]),
                                          static_cast<float>(block_max + block_drift));
      e.bound[k] = static_cast<float>((drift[k] + out) * (1 + 0x1p-20));  // the bound's own rounding
    }
  }
  return e;
}

//! One hash per (rank, case) in shared memory, so forked ranks can be compared too.
class shared_hashes {
 public:
  explicit shared_hashes(std::size_t n) : n_(n) {
    void* p = ::mmap(nullptr, n * sizeof(std::uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("shared_hashes: mmap failed");
    h_ = static_cast<std::uint64_t*>(p);
  }
  shared_hashes(const shared_hashes&) = delete;
  shared_hashes& operator=(const shared_hashes&) = delete;
  ~shared_hashes() { ::munmap(h_, n_ * sizeof(std::uint64_t)); }
  std::uint64_t& operator[](std::size_t i) noexcept { return h_[i]; }

 private:
  std::size_t n_;
  std::uint64_t* h_;
};

inline std::uint64_t hash_bytes(const unsigned char* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

//! Runs the compressed allreduce cases over World's worlds (or those given) and returns how many
//! checks failed, with the first failures' text in `log_text` (the suite requires 0; the tests of
//! broken codecs require more).
template <class World>
std::size_t compressed_allreduce_failures(std::string& log_text, std::vector<int> worlds = World::world_sizes(),
                                          std::vector<std::size_t> counts = compressed_counts()) {
  using codec_type = typename World::communicator_type::codec_type;
  std::size_t failures = 0;
  for (int world : worlds) {
    struct one_case {
      std::size_t count;
      op o;
      compressed_expectation e;
    };
    std::vector<one_case> cases;
    for (std::size_t count : counts)
      for (op o : {op::sum, op::avg}) cases.push_back({count, o, expect_compressed<codec_type>(world, count, o)});
    const std::size_t slots = cases.size() * 2;  // in place and out of place
    shared_hashes hashes(slots * static_cast<std::size_t>(world));
    failure_log log;
    use_suite_chunk();
    World::run(world, [&](auto& comm) {
      const int r = comm.rank();
      guarded_buffer in, out;
      std::vector<unsigned char> pristine;
      for (std::size_t c = 0; c < cases.size(); ++c) {
        const auto& k = cases[c];
        const std::size_t bytes = k.count * sizeof(float);
        for (int in_place = 0; in_place < 2; ++in_place) {
          const auto name = case_name("allreduce", world, k.count, dtype::f32, k.o, in_place) + " codec " +
                            std::string(codec_type::name);
          bool input_intact = true;
          const auto fill = [&](unsigned char* p) {
            for (std::size_t i = 0; i < k.count; ++i) {
              const float v = gradient_value(r, i);
              std::memcpy(p + i * sizeof(float), &v, sizeof v);
            }
          };
          if (in_place) {
            out.reset(bytes, 0);
            fill(out.data());
            comm.allreduce(tensor_view(out.data(), k.count, dtype::f32), k.o);
          } else {
            in.reset(bytes, 0);
            fill(in.data());
            pristine.assign(in.data(), in.data() + bytes);
            out.reset(bytes, output_fill);
            comm.allreduce(const_tensor_view(in.data(), k.count, dtype::f32), tensor_view(out.data(), k.count, dtype::f32),
                           k.o);
            input_intact = std::equal(pristine.begin(), pristine.end(), in.data()) && in.guards_intact();
          }
          std::size_t wrong = 0, first_bad = 0;
          for (std::size_t i = 0; i < k.count; ++i) {
            float v;
            std::memcpy(&v, out.data() + i * sizeof(float), sizeof v);
            if (!(std::fabs(static_cast<double>(v) - k.e.reference[i]) <= k.e.bound[i])) {
              if (!wrong++) first_bad = i;
            }
          }
          if (wrong) {
            float v;
            std::memcpy(&v, out.data() + first_bad * sizeof(float), sizeof v);
            log.record(r, name + ": " + std::to_string(wrong) + " elements outside the bound; first at " +
                              std::to_string(first_bad) + ": got " + std::to_string(v) + ", reference " +
                              std::to_string(k.e.reference[first_bad]) + ", bound " + std::to_string(k.e.bound[first_bad]));
          }
          verify(log, r, name, 0, 0, out.guards_intact(), input_intact);
          hashes[(c * 2 + static_cast<std::size_t>(in_place)) * static_cast<std::size_t>(world) + static_cast<std::size_t>(r)] =
              hash_bytes(out.data(), bytes);
        }
      }
    });
    std::size_t differ = 0;
    for (std::size_t c = 0; c < slots; ++c)
      for (int q = 1; q < world; ++q)
        if (hashes[c * static_cast<std::size_t>(world) + static_cast<std::size_t>(q)] != hashes[c * static_cast<std::size_t>(world)]) {
          if (!differ++)
            log.record(q, "case " + std::to_string(c) + ": result differs from rank 0's (replicas would drift apart)");
        }
    failures += log.count();
    if (log.count()) log_text += std::string(World::name) + " world=" + std::to_string(world) + "\n" + log.text();
  }
  return failures;
}

}  // namespace tutti::testing

TEST_CASE_TEMPLATE_DEFINE("compressed_allreduce_conformance: within the codec's written bound", World,
                          compressed_allreduce_conformance) {
  std::string text;
  const auto failures = tutti::testing::compressed_allreduce_failures<World>(text);
  INFO(text);
  CHECK(failures == 0);
}
