//! @file export_mode.cpp  tutti-tune --export FORMAT: a table's rows (of --dtype's class) as NCCL,
//! UCC or Open MPI read them (tuner/export.hpp), to --output or stdout.
//!
//! A translation unit of its own: tuner/export_*.hpp's helpers (tuner::exporting::layout_text,
//! bytes_text) and tuner/choose.hpp's and interpolate.hpp's (tuner::layout_text, bytes_text) share
//! names, and a call with a tuner::layout argument finds both.
#include <cstdio>
#include <string>

#include "files.hpp"
#include "options.hpp"
#include "tutti/tuner/export.hpp"

namespace tune {

int export_mode(const options& o) {
  const tutti::tuner::table t = table_for(o);
  const auto cls = o.explain_dtype == "integer" ? tutti::tuner::dtype_class::integer : tutti::tuner::dtype_class::floating;
  const std::string text = tutti::tuner::export_table(t, o.export_format, cls);
  if (o.output_given) write_file(o.output, text);
  else std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace tune
