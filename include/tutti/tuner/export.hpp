//! @file export.hpp  A tuning table in another library's format, by name: what
//! `tutti-tune --export nccl|ucc|ompi|ompi-json` writes.
#pragma once
#include <string>
#include <string_view>

#include "tutti/core/error.hpp"
#include "tutti/tuner/export_nccl.hpp"
#include "tutti/tuner/export_ompi.hpp"
#include "tutti/tuner/export_ucc.hpp"

namespace tutti::tuner {

//! The formats export_table knows, for a command line's help and its refusal.
inline constexpr std::string_view export_formats = "nccl, ucc, ompi, ompi-json";

//! `t`'s rows for `dtypes` as `format`: "nccl" (NCCL tuner-plugin CSV), "ucc" (a ucc.conf
//! fragment), "ompi" (Open MPI coll/tuned classic rules), "ompi-json" (Open MPI 6.0 JSON rules).
[[nodiscard]] inline std::string export_table(const table& t, std::string_view format,
                                              dtype_class dtypes = dtype_class::floating) {
  if (format == "nccl") return to_nccl_csv(t, {dtypes});
  if (format == "ucc") return to_ucc_conf(t, {dtypes});
  if (format == "ompi") return to_ompi_rules(t, {dtypes});
  if (format == "ompi-json") return to_ompi_json(t, {dtypes});
  throw invalid_argument("export format \"" + std::string(format) + "\" is not one of " + std::string(export_formats));
}

}  // namespace tutti::tuner
