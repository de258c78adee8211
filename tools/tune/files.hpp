//! @file files.hpp  The files tutti-tune reads and writes: which table a mode reads, and writing
//! through a temporary file.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "options.hpp"
#include "tutti/core/error.hpp"
#include "tutti/tuner/default_table.hpp"
#include "tutti/tuner/table.hpp"
#include "tutti/tuner/table_json.hpp"

namespace tune {

//! --table FILE, else TUTTI_TUNING_FILE, else the built-in default: what tuned<...> would read.
[[nodiscard]] inline tutti::tuner::table table_for(const options& o) {
  if (!o.table.empty()) return tutti::tuner::read_table_file(o.table);
  if (const char* file = std::getenv("TUTTI_TUNING_FILE"); file && *file) return tutti::tuner::read_table_file(file);
  return tutti::tuner::read_table(tutti::tuner::default_table_json, std::string(tutti::tuner::default_table_source));
}

//! Writes `text` to `path` through a temporary file and a rename: a failed run leaves no half table.
inline void write_file(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw tutti::invalid_argument("cannot write '" + temporary + "'");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw tutti::invalid_argument("cannot rename '" + temporary + "' to '" + path + "'");
}

}  // namespace tune
