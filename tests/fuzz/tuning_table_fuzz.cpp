//! @file tuning_table_fuzz.cpp  libFuzzer target: the tuning table reader (tuner/table_json.hpp) on arbitrary text.
//!
//! Every rank reads TUTTI_TUNING_FILE, which a user may have edited by hand. Asserted besides the
//! sanitizers' checks:
//!  - read_table either returns or throws tutti::invalid_argument naming the source ("fuzz.json");
//!  - a table that reads writes (table_write.hpp) to text that reads back to the same text: the
//!    writer's output is a fixed point, so what one rank wrote every rank reads alike.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tutti/core/error.hpp"
#include "tutti/tuner/table_json.hpp"
#include "tutti/tuner/table_write.hpp"
#include "require.hpp"

using tutti_fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string once;
  try {
    once = tutti::tuner::write_table(tutti::tuner::read_table(text, "fuzz.json"));
  } catch (const tutti::invalid_argument& e) {
    require(std::string(e.what()).find("fuzz.json") != std::string::npos);
    return 0;
  } catch (...) {
    require(false);
  }
  try {  // what the writer wrote must read back, to the same text
    require(tutti::tuner::write_table(tutti::tuner::read_table(once, "written")) == once);
  } catch (...) {
    require(false);
  }
  return 0;
}
