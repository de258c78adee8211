//! @file config_fuzz.cpp  libFuzzer target: the experiment configuration (trainer/config.hpp) on arbitrary text.
//!
//! A user's YAML may be anything: a typo, a tab, a binary file given by mistake, a document nested
//! a thousand deep. Asserted besides the sanitizers' checks: experiment_config::parse either
//! returns or throws tutti::invalid_argument whose message names the file ("fuzz.yaml"), and
//! nothing else escapes (no YAML::Exception, no std::out_of_range, no crash).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tutti/core/error.hpp"
#include "tutti/trainer/config.hpp"
#include "require.hpp"

using tutti_fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)tutti::trainer::experiment_config::parse(text, "fuzz.yaml");
  } catch (const tutti::invalid_argument& e) {
    require(std::string(e.what()).find("fuzz.yaml") != std::string::npos);
  } catch (...) {
    require(false);
  }
  return 0;
}
