//! @file options.hpp  tutti-bench's command line: nccl-tests' flags with their meanings, plus tutti's own as long options.
//!
//! parse() checks everything that the flags alone can tell; what needs the launcher's world size
//! (-t and -r under a launcher) or the table of runners (--algorithm with --transport) is checked
//! by the caller. A tutti-bench started by a launcher (tutti-run, mpirun, srun, torchrun) is one
//! rank of that job: --transport defaults to shm there, never to N independent in-process runs.
#pragma once
#include <tutti/tutti.hpp>

#include <getopt.h>

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

namespace bench {

using tutti::dtype;
using tutti::op;

enum class collective_kind { allreduce, reduce_scatter, allgather, broadcast, reduce, alltoall };

struct collective_info {
  std::string_view name;
  collective_kind kind;
  bool reduces;  //!< has a redop column value
  bool rooted;   //!< has a root column value
};

inline constexpr std::array<collective_info, 6> collectives = {{
    {"allreduce", collective_kind::allreduce, true, false},
    {"reduce_scatter", collective_kind::reduce_scatter, true, false},
    {"allgather", collective_kind::allgather, false, false},
    {"broadcast", collective_kind::broadcast, false, true},
    {"reduce", collective_kind::reduce, true, true},
    {"alltoall", collective_kind::alltoall, false, false},
}};

//! Who carries the bytes: threads of this process, or one process per rank started by a launcher.
enum class transport_kind { inproc, shm, multi_node };

inline constexpr std::array<transport_kind, 3> transports = {transport_kind::inproc, transport_kind::shm,
                                                             transport_kind::multi_node};

[[nodiscard]] constexpr std::string_view name_of(transport_kind t) noexcept {
  return t == transport_kind::shm ? "shm" : t == transport_kind::multi_node ? "multi_node" : "inproc";
}

//! --codec: what allreduce puts on the wire. none is exact; the others are tutti's lossy codecs
//! (tutti/codec/), carried by allreduce of float32 with sum or avg only.
enum class codec_kind { none, fp16, bf16, int8 };

inline constexpr std::array<codec_kind, 4> codecs = {codec_kind::none, codec_kind::fp16, codec_kind::bf16,
                                                     codec_kind::int8};

[[nodiscard]] constexpr std::string_view name_of(codec_kind c) noexcept {
  switch (c) {
    case codec_kind::none: return "none";
    case codec_kind::fp16: return "fp16";
    case codec_kind::bf16: return "bf16";
    case codec_kind::int8: return "int8";
  }
  return "?";
}

//! -a: how each row's time is aggregated over ranks (nccl-tests' --average).
enum class average_kind { rank0 = 0, mean = 1, min = 2, max = 3 };

[[nodiscard]] constexpr std::string_view name_of(average_kind a) noexcept {
  switch (a) {
    case average_kind::rank0: return "rank 0's";
    case average_kind::mean: return "the mean over ranks of each rank's";
    case average_kind::min: return "the minimum over ranks of each rank's";
    case average_kind::max: return "the maximum over ranks of each rank's";
  }
  return "?";
}

struct options {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t step_factor = 2;
  std::size_t step_bytes = 0;  //!< -i: add this between rows instead of multiplying by -f (0: use -f)
  int agg_iters = 1;           //!< -m: collectives per timed iteration
  average_kind average = average_kind::mean;  //!< -a
  double timeout_s = 0;        //!< -T: seconds (0: TUTTI_TIMEOUT)
  bool transport_given = false;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  dtype type = dtype::f32;
  op reduction = op::sum;
  int ranks = 2;             //!< -t; under -T shm replaced by the launcher's world size
  bool ranks_given = false;  //!< -t was on the command line
  const collective_info* coll = &collectives[0];
  int root = 0;
  int ranks_per_node = 0;  //!< --ranks-per-node, inproc only: simulated nodes of K ranks (0: one node)
  std::string algorithm = "ring";
  transport_kind transport = transport_kind::inproc;
  codec_kind codec = codec_kind::none;  //!< --codec: lossy codecs need allreduce, float, sum or avg
  bool registered = false;  //!< -R 1: buffers from the transport's registered memory
  bool membw = false;
};

struct usage_error {
  std::string what;
};

inline void print_usage(std::FILE* f) {
  std::fprintf(f,
               "usage: tutti-bench [options]                       (ranks are threads of this process)\n"
               "       tutti-run -n N [--no-prefix] -- tutti-bench [options]    (each process one rank)\n"
               "nccl-tests' flags, with nccl-tests' meanings:\n"
               "  -b, --minbytes N        smallest message in bytes, K/M/G suffixes (default 8)\n"
               "  -e, --maxbytes N        largest message in bytes (default 64M)\n"
               "  -i, --stepbytes N       add N bytes between rows (default 0: multiply by -f)\n"
               "  -f, --stepfactor N      multiply the size by N between rows (default 2)\n"
               "  -t, --nthreads N        ranks as threads of this process (in-process runs; default 2);\n"
               "                          under a launcher the job's world size, which -t may only repeat\n"
               "  -g, --ngpus N           GPUs per thread: only 1 (tutti-bench runs on CPUs)\n"
               "  -n, --iters N           timed iterations per size (default 20)\n"
               "  -w, --warmup_iters N    untimed iterations at the largest size first, then before each size (default 5)\n"
               "  -m, --agg_iters N       collectives per timed iteration (default 1)\n"
               "  -a, --average 0|1|2|3   each row's time over ranks: rank 0's, mean, min, max (default 1)\n"
               "  -c, --check 0|1         run one more, untimed iteration and count wrong elements (default 1)\n"
               "  -z, --blocking 0|1      accepted; tutti's collectives always return complete (default 0)\n"
               "  -d, --datatype T        float double half bfloat16 int8 int16 int32 int64 uint8 uint32 uint64\n"
               "                          (default float)\n"
               "  -o, --op OP             sum prod min max avg (default sum)\n"
               "  -r, --root R            broadcast and reduce root (default 0)\n"
               "  -R, --local_register 0|1  buffers from the transport's registered memory, which\n"
               "                          algorithm::direct reads in place (shm only) (default 0)\n"
               "  -T, --timeout S         seconds before a collective gives up (default: TUTTI_TIMEOUT)\n"
               "tutti's own:\n"
               "  --collective C          allreduce reduce_scatter allgather broadcast reduce alltoall\n"
               "                          (default allreduce; nccl-tests has one program per collective)\n"
               "  --transport T           inproc: every rank a thread of this process (default without a\n"
               "                          launcher); shm: this process is one rank of a job on one host\n"
               "                          (default under a launcher); multi_node: one rank of a job across\n"
               "                          hosts (shm inside a host, UCX between; builds with UCX and OpenSSL)\n"
               "  --algorithm A           ring; direct (shm); automatic; tree (allreduce reduce broadcast\n"
               "                          barrier); halving_doubling; hierarchical (ring inside nodes, ring\n"
               "                          across); hierarchical_hd; hierarchical_direct (shm); eager (inproc,\n"
               "                          multi_node: one round, the check in it, up to 1 KiB); tuned\n"
               "                          (default ring)\n"
               "  --codec C               none fp16 bf16 int8: the allreduce's wire format (default none:\n"
               "                          exact). Lossy codecs carry allreduce of float with sum or avg\n"
               "                          only, with ring (inproc), ring or automatic (shm) and ring,\n"
               "                          halving_doubling, hierarchical or automatic (multi_node);\n"
               "                          algbw and busbw count float32 bytes, as without a codec, and\n"
               "                          #wrong counts elements outside the codec's error bound\n"
               "  --ranks-per-node K      in-process runs: simulated nodes of K ranks (rank r on node r/K);\n"
               "                          under tutti-run: tutti-run --ranks-per-node K (default: one node)\n"
               "  --membw 0|1             also measure 1-thread memcpy bandwidth and print busbw as %% of it\n"
               "  --json FILE             JSON output: not available in this build (needs nlohmann-json3-dev)\n"
               "  -h, --help              this text\n"
               "Every row is run out of place, then in place, and printed side by side as nccl-tests does.\n"
               "Sizes are total buffer bytes (for reduce_scatter and allgather, all ranks' parts together;\n"
               "for alltoall, one rank's whole send buffer), rounded down to whole elements per rank (per\n"
               "block for alltoall). Under a launcher only rank 0 prints the table.\n"
               "Environment: TUTTI_CHUNK_BYTES, TUTTI_CHECK, TUTTI_TIMEOUT, TUTTI_LOG; with shm also\n"
               "TUTTI_SHM_SLOTS, TUTTI_SHM_SLOT_BYTES, TUTTI_SHM_STAGE_BYTES, TUTTI_SHM_POOL_BYTES; with\n"
               "multi_node also TUTTI_STORE_ADDR, TUTTI_JOB_KEY, TUTTI_NET_IFACE and UCX's own UCX_*.\n"
               "Exit status: 0 ok, 1 wrong results or a failed rank, 2 bad usage.\n");
}

//! Codes of the long-only options (tutti's own).
enum long_only : int {
  opt_collective = 256,
  opt_transport,
  opt_algorithm,
  opt_ranks_per_node,
  opt_membw,
  opt_json,
  opt_codec
};

inline std::string flag_name(int c) {
  switch (c) {
    case opt_collective: return "--collective";
    case opt_transport: return "--transport";
    case opt_algorithm: return "--algorithm";
    case opt_ranks_per_node: return "--ranks-per-node";
    case opt_membw: return "--membw";
    case opt_json: return "--json";
    case opt_codec: return "--codec";
    default: return std::string("-") + static_cast<char>(c);
  }
}

//! A byte count with an optional binary K/M/G suffix, like nccl-tests.
inline std::size_t parse_bytes(int flag, std::string_view s) {
  std::size_t mult = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K': case 'k': mult = std::size_t{1} << 10; break;
      case 'M': case 'm': mult = std::size_t{1} << 20; break;
      case 'G': case 'g': mult = std::size_t{1} << 30; break;
      default: break;
    }
  }
  const std::string_view digits = mult == 1 ? s : s.substr(0, s.size() - 1);
  std::size_t n = 0;
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (digits.empty() || ec != std::errc{} || p != digits.data() + digits.size())
    throw usage_error{flag_name(flag) + " '" + std::string(s) + "': not a byte size (like 8, 512K, 64M, 1G)"};
  if (n > std::numeric_limits<std::size_t>::max() / mult)
    throw usage_error{flag_name(flag) + " '" + std::string(s) + "': too large"};
  return n * mult;
}

inline long long parse_integer(int flag, std::string_view s, long long lo, long long hi) {
  long long n = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size())
    throw usage_error{flag_name(flag) + " '" + std::string(s) + "': not an integer"};
  if (n < lo || n > hi)
    throw usage_error{flag_name(flag) + " " + std::string(s) + ": must be in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]"};
  return n;
}

inline bool parse_bool(int flag, std::string_view s) {
  if (s == "0") return false;
  if (s == "1") return true;
  throw usage_error{flag_name(flag) + " '" + std::string(s) + "': must be 0 or 1"};
}

//! Finds `s` among the names of `all` (via name_of) or lists the choices.
template <class Container, class Name>
decltype(auto) parse_choice(int flag, std::string_view s, const Container& all, Name name_of, std::string_view what) {
  std::string choices;
  for (const auto& x : all) {  // returned by reference: the element of `all`
    if (name_of(x) == s) return x;
    choices += (choices.empty() ? "" : ", ") + std::string(name_of(x));
  }
  throw usage_error{flag_name(flag) + " '" + std::string(s) + "': unknown " + std::string(what) + " (one of " +
                    choices + ")"};
}

//! -r must name a rank; under -T shm the caller knows the world size only after parsing.
//! `source` says where the rank count came from ("-t", "tutti-run -n").
inline void check_root(const options& o, std::string_view source) {
  if (o.root >= o.ranks)
    throw usage_error{"-r " + std::to_string(o.root) + ": root must be below the number of ranks (" +
                      std::string(source) + " " + std::to_string(o.ranks) + ")"};
}

//! True when a launcher's variables say this process is one rank of a job (tutti-run, mpirun,
//! srun, torchrun): then the default transport is shm, not N ranks as threads of every process.
[[nodiscard]] inline bool started_by_launcher() { return tutti::rank_info_from_env().launcher != "none"; }

//! nccl-tests' flag letters that tutti-bench used to give its own meanings: say where they went.
inline void refuse_old_meaning(int c, std::string_view arg) {
  const auto is_number = [&] { return !arg.empty() && arg.find_first_not_of("0123456789.") == std::string_view::npos; };
  if (c == 'a' && !is_number())
    throw usage_error{"-a '" + std::string(arg) + "': -a is nccl-tests' --average (0 rank 0, 1 mean, 2 min, 3 max); "
                      "the algorithm is --algorithm " + std::string(arg)};
  if (c == 'T' && !is_number())
    throw usage_error{"-T '" + std::string(arg) + "': -T is nccl-tests' --timeout in seconds; the transport is "
                      "--transport " + std::string(arg)};
  if (c == 'i' && (arg == "0" || arg == "1"))
    return;  // a step of 0 or 1 byte is legal; the old -i 0|1 (in place) is printed side by side now
}

//! A lossy --codec compresses float32 sum/avg allreduce and nothing else (the communicator would
//! refuse the rest at run time, rank by rank): say so once, naming the flag, before anything starts.
inline void check_codec(const options& o) {
  if (o.codec == codec_kind::none) return;
  const std::string flag = "--codec " + std::string(name_of(o.codec));
  if (o.coll->kind != collective_kind::allreduce)
    throw usage_error{flag + ": lossy codecs compress allreduce only; got --collective " + std::string(o.coll->name) +
                      " (leave --codec out, or --codec none, for other collectives)"};
  if (o.type != dtype::f32)
    throw usage_error{flag + ": lossy codecs carry float (float32) only; got -d " + std::string(tutti::name_of(o.type)) +
                      " (use -d float, or --codec none for other datatypes)"};
  if (o.reduction != op::sum && o.reduction != op::avg)
    throw usage_error{flag + ": lossy codecs carry -o sum and -o avg only; got -o " +
                      std::string(tutti::name_of(o.reduction)) + " (use --codec none for it)"};
}

inline options parse(int argc, char** argv) {
  static const ::option long_options[] = {
      {"minbytes", required_argument, nullptr, 'b'},     {"maxbytes", required_argument, nullptr, 'e'},
      {"stepbytes", required_argument, nullptr, 'i'},    {"stepfactor", required_argument, nullptr, 'f'},
      {"nthreads", required_argument, nullptr, 't'},     {"ngpus", required_argument, nullptr, 'g'},
      {"iters", required_argument, nullptr, 'n'},        {"warmup_iters", required_argument, nullptr, 'w'},
      {"agg_iters", required_argument, nullptr, 'm'},    {"average", required_argument, nullptr, 'a'},
      {"check", required_argument, nullptr, 'c'},        {"blocking", required_argument, nullptr, 'z'},
      {"datatype", required_argument, nullptr, 'd'},     {"op", required_argument, nullptr, 'o'},
      {"root", required_argument, nullptr, 'r'},         {"local_register", required_argument, nullptr, 'R'},
      {"timeout", required_argument, nullptr, 'T'},
      {"collective", required_argument, nullptr, opt_collective},
      {"transport", required_argument, nullptr, opt_transport},
      {"algorithm", required_argument, nullptr, opt_algorithm},
      {"ranks-per-node", required_argument, nullptr, opt_ranks_per_node},
      {"membw", required_argument, nullptr, opt_membw},
      {"json", required_argument, nullptr, opt_json},
      {"codec", required_argument, nullptr, opt_codec},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  options o;
  bool root_given = false;
  opterr = 0;  // our own messages
  for (int c; (c = getopt_long(argc, argv, ":b:e:i:f:t:g:n:w:m:a:c:z:d:o:r:R:T:h", long_options, nullptr)) != -1;) {
    const std::string_view arg = optarg ? optarg : "";
    refuse_old_meaning(c, arg);
    switch (c) {
      case 'b': o.min_bytes = parse_bytes(c, arg); break;
      case 'e': o.max_bytes = parse_bytes(c, arg); break;
      case 'i': o.step_bytes = parse_bytes(c, arg); break;
      case 'f': o.step_factor = static_cast<std::size_t>(parse_integer(c, arg, 2, 1 << 20)); break;
      case 't': o.ranks = static_cast<int>(parse_integer(c, arg, 1, 1024)); o.ranks_given = true; break;
      case 'g':
        if (parse_integer(c, arg, 1, 1 << 20) != 1)
          throw usage_error{"-g " + std::string(arg) + ": tutti-bench runs on CPUs; -g (GPUs per thread) must be 1"};
        break;
      case 'n': o.iters = static_cast<int>(parse_integer(c, arg, 1, 1 << 30)); break;
      case 'w': o.warmup = static_cast<int>(parse_integer(c, arg, 0, 1 << 30)); break;
      case 'm': o.agg_iters = static_cast<int>(parse_integer(c, arg, 1, 1 << 20)); break;
      case 'a': o.average = static_cast<average_kind>(parse_integer(c, arg, 0, 3)); break;
      case 'c': o.check = parse_bool(c, arg); break;
      case 'z': (void)parse_bool(c, arg); break;  // every tutti collective returns complete
      case 'd': o.type = parse_choice(c, arg, tutti::all_dtypes, [](dtype t) { return tutti::name_of(t); }, "datatype"); break;
      case 'o': o.reduction = parse_choice(c, arg, tutti::all_ops, [](op x) { return tutti::name_of(x); }, "op"); break;
      case 'r': o.root = static_cast<int>(parse_integer(c, arg, 0, 1023)); root_given = true; break;
      case 'R': o.registered = parse_bool(c, arg); break;
      case 'T': o.timeout_s = static_cast<double>(parse_integer(c, arg, 1, 1 << 24)); break;
      case opt_collective:
        o.coll = &parse_choice(c, arg, collectives, [](const collective_info& x) { return x.name; }, "collective");
        break;
      case opt_transport:
        o.transport = parse_choice(c, arg, transports, [](transport_kind t) { return name_of(t); }, "transport");
        o.transport_given = true;
        break;
      case opt_algorithm: o.algorithm = arg; break;  // checked against the table of runners in main
      case opt_ranks_per_node: o.ranks_per_node = static_cast<int>(parse_integer(c, arg, 1, 1024)); break;
      case opt_membw: o.membw = parse_bool(c, arg); break;
      case opt_codec: o.codec = parse_choice(c, arg, codecs, [](codec_kind k) { return name_of(k); }, "codec"); break;
      case opt_json:
        throw usage_error{"--json: JSON output is not available: this build has no nlohmann/json "
                          "(Debian package nlohmann-json3-dev)"};
      case 'h': print_usage(stdout); std::exit(0);
      case ':': throw usage_error{flag_name(optopt ? optopt : '?') + " needs a value"};
      default: {
        const std::string given = optopt ? flag_name(optopt) : std::string(argv[optind - 1]);
        std::string hint;
        if (optopt == 'C') hint = " (the collective is --collective; nccl-tests' -C, report_cputime, is not supported)";
        else if (optopt == 'M') hint = " (memory bandwidth is --membw)";
        else if (optopt == 'K') hint = " (simulated nodes are --ranks-per-node)";
        else if (optopt == 'J') hint = " (JSON output is --json)";
        throw usage_error{"unknown option " + given + hint};
      }
    }
  }
  if (optind < argc) throw usage_error{"unexpected argument '" + std::string(argv[optind]) + "'"};
  if (!o.transport_given && started_by_launcher()) o.transport = transport_kind::shm;
  if (o.min_bytes == 0) throw usage_error{"-b 0: the smallest size must be at least 1 byte"};
  if (o.min_bytes > o.max_bytes)
    throw usage_error{"-b " + std::to_string(o.min_bytes) + " is larger than -e " + std::to_string(o.max_bytes)};
  if (o.registered && o.transport != transport_kind::shm)
    throw usage_error{"-R 1: registered buffers need --transport shm (this transport has no registered memory)"};
  if (o.transport == transport_kind::inproc) check_root(o, "-t");
  if (root_given && !o.coll->rooted)
    throw usage_error{"-r: " + std::string(o.coll->name) + " has no root (only broadcast and reduce do)"};
  check_codec(o);
  if (o.ranks_per_node && o.transport != transport_kind::inproc)
    throw usage_error{"--ranks-per-node: with --transport " + std::string(name_of(o.transport)) +
                      " the launcher places ranks on nodes (real hosts, or tutti-run --ranks-per-node " +
                      std::to_string(o.ranks_per_node) + " -n N -- tutti-bench ...)"};
  return o;
}

}  // namespace bench
