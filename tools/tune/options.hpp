//! @file options.hpp  tutti-tune's command line: the modes (sweep, --explain, --check, --export),
//! their flags, sizes such as "64K" or "1MiB", and the help text.
#pragma once
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/core/dtype.hpp"

namespace tune {

//! Bad usage: printed with a pointer to --help, exit status 2.
struct usage_error {
  std::string what;
};

enum class mode { sweep, explain, check, export_table, combine, rechoose, help };

struct options {
  mode what = mode::sweep;
  // ---- the sweep
  std::string transport = "shm";  //!< shm | multi_node
  std::vector<tutti::collective> collectives{tutti::collective::allreduce};
  std::vector<tutti::dtype> dtypes{tutti::dtype::f32};  //!< float -> f32, integer -> i32
  std::vector<std::uint64_t> sizes;                     //!< --sizes; else min..max by factor
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = std::uint64_t{256} << 20;
  double factor = 4;
  int reps = 5;            //!< interleaved repeats per point
  int warmup = 1;          //!< untimed calls before each timed loop
  double target_ms = 5;    //!< each timed loop lasts about this long (iterations scaled to it)
  int max_iters = 2000;    //!< ... with at most this many iterations
  double budget_s = 900;   //!< the whole sweep's time bound
  bool knob_variants = true;
  double machine_cores = 0;  //!< --machine-cores: every node ran on one machine of this many cores (the model's fit)
  std::string output = "tutti-tuning.json";
  std::string merge;  //!< --merge FILE: keep that table's other layouts
  std::vector<std::string> pool;  //!< --pool A,B,...: earlier launches' tables of this layout (tools/tune/pool.hpp)
  std::string versus;  //!< --versus FILE: tuned reading FILE against every candidate (no table written)
  // ---- --explain / --check / --export
  std::uint64_t explain_bytes = 0;
  tutti::collective explain_collective = tutti::collective::allreduce;
  std::string explain_dtype = "float";
  std::string table;  //!< --table FILE (--explain, --export); --check's FILE
  int world = 0, nodes = 0, ranks_per_node = -1;  //!< --explain's layout (0/-1: from the table)
  std::string export_format;  //!< nccl | ucc | ompi | ompi-json
  std::vector<std::string> combine;  //!< --combine A,B,...
  bool output_given = false;
  std::string command;  //!< the command line, for the provenance
};

inline constexpr const char* help_text =
    "usage: tutti-run -n N -- tutti-tune [--transport shm|multi_node] [--collectives LIST] [--dtypes LIST]\n"
    "                  [--sizes LIST | --min-bytes B --max-bytes B --factor F] [--reps R] [--budget SECONDS]\n"
    "                  [--output FILE] [--merge FILE] [--pool A,B,...] [--no-knobs]\n"
    "       tutti-run -n N -- tutti-tune --versus FILE [sweep options] [--output FILE]\n"
    "       tutti-tune --explain SIZE [--collective C] [--dtype float|integer] [--table FILE]\n"
    "                  [--world N --nodes N --ranks-per-node N]\n"
    "       tutti-tune --check FILE\n"
    "       tutti-tune --combine A,B[,...] [--transport shm|multi_node] [--machine-cores N] --output FILE\n"
    "       tutti-tune --rechoose FILE --output FILE\n"
    "       tutti-tune --export nccl|ucc|ompi|ompi-json [--dtype float|integer] [--table FILE] [--output FILE]\n"
    "\n"
    "Measures every candidate algorithm of algorithm::tuned<...> for this transport (and knob variants)\n"
    "and writes a tuning table that algorithm::tuned reads (TUTTI_TUNING_FILE). Started like the job:\n"
    "every process is one rank (tutti-run, mpirun, srun, torchrun-style variables).\n"
    "\n"
    "  --transport T       shm (one host, default) or multi_node (shm inside hosts, UCX between)\n"
    "  --collectives LIST  allreduce,reduce_scatter,allgather,broadcast,reduce,alltoall (default allreduce)\n"
    "  --dtypes LIST       float (f32), integer (i32) (default float)\n"
    "  --sizes LIST        sizes in bytes, e.g. 8,64K,1M (as collective_descriptor counts them: per rank\n"
    "                      for reduce_scatter and allgather, per block for alltoall)\n"
    "  --min-bytes B --max-bytes B --factor F   otherwise B, B*F, B*F^2, ... and max (default 8, 256M, 4)\n"
    "  --reps R            interleaved repeats per point (default 5); median and spread (p75 - p25) of them\n"
    "  --warmup W          untimed calls before each timed loop (default 1)\n"
    "  --target-ms T       iterations per timed loop so that it lasts about T ms (default 5, at most --max-iters)\n"
    "  --budget SECONDS    bound on the whole sweep (default 900): fewer repeats, or fewer sizes, and the\n"
    "                      table's provenance says what was done\n"
    "  --no-knobs          measure the algorithms with their default tuning values only\n"
    "  --machine-cores N   every node measured ran on one machine of N cores (namespace hosts, simulated\n"
    "                      nodes): for the cost model's oversubscription term (default: each node has\n"
    "                      this machine's cores)\n"
    "  --output FILE       where the table goes (default tutti-tuning.json); --export: where it goes\n"
    "                      (default stdout)\n"
    "  --merge FILE        keep FILE's rows and samples of other layouts (and collectives) in the output\n"
    "  --pool A,B,...      earlier launches' tables (unpooled) of this layout: each point's median is the\n"
    "                      median over the launches, its spread their median spread; the rows are chosen\n"
    "                      from those (a slow state one launch kept is outvoted by three or more)\n"
    "  --versus FILE       no tune: algorithm::tuned reading FILE against each candidate alone (its\n"
    "                      defaults), interleaved in one run; a markdown report of tuned / best single\n"
    "                      per point and the geometric means (to --output, default stdout); exit 1 if\n"
    "                      tuned is below 0.95x the best single anywhere or not above every one in geomean\n"
    "  --explain SIZE      why the table chose what it chose at SIZE bytes (no launcher needed)\n"
    "  --check FILE        validate a (hand-edited) table for every layout in it and print a summary\n"
    "  --combine A,B,...   one table from several (later ones replace earlier ones' layouts), the model\n"
    "                      refitted over all samples (--transport says how arguments were checked)\n"
    "  --rechoose FILE     every row chosen again from FILE's samples by this tutti-tune's rule (nothing\n"
    "                      measured; samples and model kept): a table tuned under an older rule follows it\n"
    "  --export FORMAT     the table as an NCCL tuner-plugin CSV (nccl), a ucc.conf fragment (ucc), Open MPI\n"
    "                      coll/tuned rules (ompi: classic; ompi-json: the 6.0 JSON format)\n"
    "  --table FILE        the table for --explain and --export (default TUTTI_TUNING_FILE, else built-in)\n"
    "  -h, --help          this text\n"
    "\n"
    "Exit status: 0 done; 1 failed; 2 bad usage.\n";

//! "8", "64K", "64KiB", "1M", "1MiB", "2G": bytes (K = 1024).
[[nodiscard]] inline std::uint64_t parse_bytes(std::string_view text, std::string_view flag) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  if (unit.ends_with("iB")) unit.remove_suffix(2);
  else if (unit.ends_with("B")) unit.remove_suffix(1);
  int shift = -1;
  if (unit.empty()) shift = 0;
  else if (unit == "K" || unit == "k") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  if (ec != std::errc{} || end == text.data() || shift < 0 || (shift && value > (~std::uint64_t{0} >> shift)))
    throw usage_error{std::string(flag) + " takes a size in bytes such as 8, 64K or 1MiB, got '" + std::string(text) + "'"};
  return value << shift;
}

[[nodiscard]] inline std::vector<std::string_view> split_list(std::string_view text) {
  std::vector<std::string_view> parts;
  while (!text.empty()) {
    const auto comma = text.find(',');
    parts.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return parts;
}

[[nodiscard]] inline tutti::collective parse_collective(std::string_view name) {
  using tutti::collective;
  for (collective c : {collective::allreduce, collective::reduce_scatter, collective::allgather, collective::broadcast,
                       collective::reduce, collective::alltoall})
    if (tutti::name_of(c) == name) return c;
  throw usage_error{"unknown collective '" + std::string(name) +
                    "' (one of allreduce, reduce_scatter, allgather, broadcast, reduce, alltoall)"};
}

[[nodiscard]] inline tutti::dtype parse_dtype_class(std::string_view name) {
  if (name == "float") return tutti::dtype::f32;
  if (name == "integer") return tutti::dtype::i32;
  throw usage_error{"unknown dtype class '" + std::string(name) + "' (float: measured as f32; integer: as i32)"};
}

//! Both dtype classes are measured with 4-byte elements (f32, i32): sizes are whole elements.
inline constexpr std::uint64_t element_bytes = 4;

//! The sizes the sweep measures, ascending and without repeats; generated ones rounded down to
//! whole elements.
[[nodiscard]] inline std::vector<std::uint64_t> sweep_sizes(const options& o) {
  std::vector<std::uint64_t> sizes = o.sizes;
  if (sizes.empty()) {
    auto whole = [](double s) { return std::max(element_bytes, static_cast<std::uint64_t>(s) / element_bytes * element_bytes); };
    for (double s = static_cast<double>(o.min_bytes); s <= static_cast<double>(o.max_bytes); s *= o.factor)
      sizes.push_back(whole(s));
    if (sizes.back() != whole(static_cast<double>(o.max_bytes))) sizes.push_back(whole(static_cast<double>(o.max_bytes)));
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

[[nodiscard]] inline int parse_int(std::string_view text, std::string_view flag, int low, int high) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < low || v > high)
    throw usage_error{std::string(flag) + " takes a number from " + std::to_string(low) + " to " + std::to_string(high) +
                      ", got '" + std::string(text) + "'"};
  return v;
}

[[nodiscard]] inline double parse_seconds(std::string_view text, std::string_view flag) {
  try {
    std::size_t used = 0;
    const double v = std::stod(std::string(text), &used);
    if (used == text.size() && v > 0 && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw usage_error{std::string(flag) + " takes a positive number, got '" + std::string(text) + "'"};
}

[[nodiscard]] inline options parse(int argc, char** argv) {
  options o;
  for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      o.what = mode::help;
      return o;
    }
    if (arg == "--no-knobs") {
      o.knob_variants = false;
      continue;
    }
    if (!arg.starts_with("--")) throw usage_error{"unexpected argument '" + std::string(arg) + "'"};
    if (i + 1 >= argc) throw usage_error{"option " + std::string(arg) + " needs a value"};
    const std::string_view v = argv[++i];
    if (arg == "--transport") {
      if (v != "shm" && v != "multi_node") throw usage_error{"--transport takes shm or multi_node, got '" + std::string(v) + "'"};
      o.transport = v;
    } else if (arg == "--collectives") {
      o.collectives.clear();
      for (auto name : split_list(v)) o.collectives.push_back(parse_collective(name));
    } else if (arg == "--dtypes") {
      o.dtypes.clear();
      for (auto name : split_list(v)) o.dtypes.push_back(parse_dtype_class(name));
    } else if (arg == "--sizes") {
      for (auto s : split_list(v)) {
        o.sizes.push_back(parse_bytes(s, "--sizes"));
        if (o.sizes.back() == 0 || o.sizes.back() % element_bytes)
          throw usage_error{"--sizes: " + std::string(s) + " is not a whole number of 4-byte elements (float and integer "
                            "are measured as f32 and i32)"};
      }
    } else if (arg == "--min-bytes") {
      o.min_bytes = std::max<std::uint64_t>(1, parse_bytes(v, arg));
    } else if (arg == "--max-bytes") {
      o.max_bytes = parse_bytes(v, arg);
    } else if (arg == "--factor") {
      o.factor = parse_seconds(v, arg);
      if (o.factor <= 1) throw usage_error{"--factor must be above 1"};
    } else if (arg == "--reps") {
      o.reps = parse_int(v, arg, 1, 1000);
    } else if (arg == "--warmup") {
      o.warmup = parse_int(v, arg, 0, 1000);
    } else if (arg == "--target-ms") {
      o.target_ms = parse_seconds(v, arg);
    } else if (arg == "--max-iters") {
      o.max_iters = parse_int(v, arg, 1, 1000000);
    } else if (arg == "--budget") {
      o.budget_s = parse_seconds(v, arg);
    } else if (arg == "--machine-cores") {
      o.machine_cores = parse_int(v, arg, 1, 1 << 20);
    } else if (arg == "--output") {
      o.output = v;
      o.output_given = true;
    } else if (arg == "--merge") {
      o.merge = v;
    } else if (arg == "--pool") {
      for (auto f : split_list(v)) o.pool.emplace_back(f);
    } else if (arg == "--versus") {
      o.versus = v;
      o.knob_variants = false;  // the single algorithms as they are, against the table's choices
    } else if (arg == "--explain") {
      o.what = mode::explain;
      o.explain_bytes = parse_bytes(v, arg);
    } else if (arg == "--collective") {
      o.explain_collective = parse_collective(v);
    } else if (arg == "--dtype") {
      (void)parse_dtype_class(v);
      o.explain_dtype = v;
    } else if (arg == "--table") {
      o.table = v;
    } else if (arg == "--world") {
      o.world = parse_int(v, arg, 1, 1 << 24);
    } else if (arg == "--nodes") {
      o.nodes = parse_int(v, arg, 1, 1 << 24);
    } else if (arg == "--ranks-per-node") {
      o.ranks_per_node = parse_int(v, arg, 0, 1 << 24);
    } else if (arg == "--check") {
      o.what = mode::check;
      o.table = v;
    } else if (arg == "--combine") {
      o.what = mode::combine;
      for (auto f : split_list(v)) o.combine.emplace_back(f);
    } else if (arg == "--rechoose") {
      o.what = mode::rechoose;
      o.table = v;
    } else if (arg == "--export") {
      if (v != "nccl" && v != "ucc" && v != "ompi" && v != "ompi-json")
        throw usage_error{"--export takes nccl, ucc, ompi or ompi-json, got '" + std::string(v) + "'"};
      o.what = mode::export_table;
      o.export_format = v;
    } else {
      throw usage_error{"unknown option '" + std::string(arg) + "'"};
    }
  }
  if (o.collectives.empty() || o.dtypes.empty()) throw usage_error{"--collectives and --dtypes need at least one name"};
  if (o.sizes.empty() && o.min_bytes > o.max_bytes) throw usage_error{"--min-bytes is above --max-bytes"};
  if (o.sizes.empty() && o.max_bytes < element_bytes) throw usage_error{"--max-bytes is below one element (4 bytes)"};
  return o;
}

}  // namespace tune
