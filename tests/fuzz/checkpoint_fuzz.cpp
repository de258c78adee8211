//! @file checkpoint_fuzz.cpp  libFuzzer target: trainer/checkpoint.hpp's reader on arbitrary bytes.
//!
//! A checkpoint on disk may be truncated, corrupt, from another program or a future format: the
//! reader must refuse it with tutti::invalid_argument (one sentence naming the file) and never
//! read past the bytes, allocate by a hostile length, or hand out a half-checked section. Random
//! bytes rarely pass the SHA-256 check, so the first input byte chooses the mode: odd, the rest is
//! taken as it is; even, the rest is a body whose correct checksum is appended, so the section
//! table behind the checksum is explored too. Asserted besides the sanitizers' checks:
//!  - open either succeeds or throws tutti::invalid_argument naming the file, nothing else;
//!  - what opens has every section readable to its last byte (AddressSanitizer watches the reads)
//!    and no section larger than the input.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/trainer/checkpoint.hpp"
#include "require.hpp"

using tutti_fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto rest = std::as_bytes(std::span<const std::uint8_t>(data + 1, size - 1));
  std::vector<std::byte> bytes(rest.begin(), rest.end());
  if (data[0] % 2 == 0) {
    tutti::trainer::detail::sha256 digest;
    digest.update(bytes);
    const auto sum = digest.finish();
    bytes.insert(bytes.end(), sum.begin(), sum.end());
  }
  try {
    const auto reader = tutti::trainer::checkpoint_reader::from_bytes(bytes, "fuzz.ckpt");
    unsigned sum = 0;
    for (const auto& name : reader.names()) {
      const auto section = reader.section(name);
      require(section.size() <= bytes.size());
      for (std::byte b : section) sum += static_cast<unsigned>(b);
    }
    volatile unsigned keep = sum;
    (void)keep;
  } catch (const tutti::invalid_argument& e) {
    require(std::string(e.what()).starts_with("checkpoint fuzz.ckpt"));
  } catch (...) {
    require(false);
  }
  return 0;
}
