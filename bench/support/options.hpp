//! @file options.hpp  tutti-bench's command line: the flags of nccl-tests plus tutti's own.
//!
//! parse() checks everything that the flags alone can tell; what needs the launcher's world size
//! (-t and -r under -T shm) or the table of runners (-a with -T) is checked by the caller.
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

struct options {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t step_factor = 2;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  dtype type = dtype::f32;
  op reduction = op::sum;
  int ranks = 2;             //!< -t; under -T shm replaced by the launcher's world size
  bool ranks_given = false;  //!< -t was on the command line
  const collective_info* coll = &collectives[0];
  int root = 0;
  int ranks_per_node = 0;  //!< -K, -T inproc only: simulated nodes of K ranks (0: one node)
  bool in_place = false;
  std::string algorithm = "ring";
  transport_kind transport = transport_kind::inproc;
  bool registered = false;  //!< -R 1: buffers from the transport's allocate()
  bool membw = false;
};

struct usage_error {
  std::string what;
};

inline void print_usage(std::FILE* f) {
  std::fprintf(f,
               "usage: tutti-bench [options]\n"
               "       tutti-run -n N [--no-prefix] -- tutti-bench -T shm [options]\n"
               "  -b, --minbytes N        smallest message in bytes, K/M/G suffixes (default 8)\n"
               "  -e, --maxbytes N        largest message in bytes (default 64M)\n"
               "  -f, --stepfactor N      multiply the size by N between rows (default 2)\n"
               "  -n, --iters N           timed iterations per size (default 20)\n"
               "  -w, --warmup_iters N    untimed iterations at the largest size first, then before each size (default 5)\n"
               "  -c, --check 0|1         run one more, untimed iteration and count wrong elements (default 1)\n"
               "  -d, --datatype T        float double half bfloat16 int8 int32 int64 uint8 (default float)\n"
               "  -o, --op OP             sum prod min max avg (default sum)\n"
               "  -T, --transport T       inproc: every rank a thread of this process (default);\n"
               "                          shm: this process is one rank of a job started by tutti-run\n"
               "                          multi_node: one rank of a job across hosts (shm inside a host,\n"
               "                          UCX between; started by tutti-run, torchrun's variables or mpirun;\n"
               "                          only in builds with UCX and OpenSSL, see docs/multi-node.md)\n"
               "  -t, --ranks N           ranks: threads with -T inproc (default 2); with -T shm or multi_node the\n"
               "                          launcher's world size (TUTTI_WORLD_SIZE), -t may only repeat it\n"
               "  -C, --collective C      allreduce reduce_scatter allgather broadcast reduce alltoall\n"
               "                          (default allreduce)\n"
               "  -r, --root R            broadcast and reduce root (default 0)\n"
               "  -i, --inplace 0|1       in-place buffers (default 0: out of place)\n"
               "  -a, --algorithm A       ring; direct (needs -T shm); automatic (direct with -T shm, else ring);\n"
               "                          tree (allreduce reduce broadcast barrier only); halving_doubling;\n"
               "                          hierarchical (ring inside nodes, ring across); hierarchical_hd\n"
               "                          (halving_doubling inside nodes, ring across); hierarchical_direct\n"
               "                          (direct inside nodes, ring across; needs -T shm) (default ring)\n"
               "  -K, --ranks-per-node K  -T inproc: simulated nodes of K ranks (rank r on node r/K), for the\n"
               "                          hierarchical algorithms; with -T shm: tutti-run --ranks-per-node K\n"
               "                          (default: one node)\n"
               "  -R, --registered 0|1    buffers from the transport's registered memory, which algorithm::direct\n"
               "                          reads in place (needs -T shm; size: TUTTI_SHM_POOL_BYTES) (default 0)\n"
               "  -M, --membw 0|1         also measure 1-thread memcpy bandwidth and print busbw as %% of it\n"
               "  -J, --json FILE         JSON output: not available in this build (needs nlohmann-json3-dev)\n"
               "  -h, --help              this text\n"
               "Sizes are total buffer bytes (for reduce_scatter and allgather, all ranks' parts together;\n"
               "for alltoall, one rank's whole send buffer), rounded down to whole elements per rank (per\n"
               "block for alltoall). With -T shm only rank 0 prints the table.\n"
               "Environment: TUTTI_CHUNK_BYTES, TUTTI_CHECK, TUTTI_TIMEOUT, TUTTI_LOG; with -T shm also\n"
               "TUTTI_SHM_SLOTS, TUTTI_SHM_SLOT_BYTES, TUTTI_SHM_STAGE_BYTES, TUTTI_SHM_POOL_BYTES; with\n"
               "-T multi_node also TUTTI_STORE_ADDR, TUTTI_JOB_KEY, TUTTI_NET_IFACE and UCX's own UCX_*.\n"
               "Exit status: 0 ok, 1 wrong results or a failed rank, 2 bad usage.\n");
}

inline std::string flag_name(int c) { return std::string("-") + static_cast<char>(c); }

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

inline options parse(int argc, char** argv) {
  static const ::option long_options[] = {
      {"minbytes", required_argument, nullptr, 'b'},    {"maxbytes", required_argument, nullptr, 'e'},
      {"stepfactor", required_argument, nullptr, 'f'},  {"iters", required_argument, nullptr, 'n'},
      {"warmup_iters", required_argument, nullptr, 'w'}, {"check", required_argument, nullptr, 'c'},
      {"datatype", required_argument, nullptr, 'd'},    {"op", required_argument, nullptr, 'o'},
      {"ranks", required_argument, nullptr, 't'},       {"collective", required_argument, nullptr, 'C'},
      {"root", required_argument, nullptr, 'r'},        {"inplace", required_argument, nullptr, 'i'},
      {"algorithm", required_argument, nullptr, 'a'},   {"membw", required_argument, nullptr, 'M'},
      {"transport", required_argument, nullptr, 'T'},   {"registered", required_argument, nullptr, 'R'},
      {"json", required_argument, nullptr, 'J'},        {"ranks-per-node", required_argument, nullptr, 'K'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  options o;
  bool root_given = false;
  opterr = 0;  // our own messages
  for (int c; (c = getopt_long(argc, argv, ":b:e:f:n:w:c:d:o:t:C:r:i:a:M:T:R:J:K:h", long_options, nullptr)) != -1;) {
    const std::string_view arg = optarg ? optarg : "";
    switch (c) {
      case 'b': o.min_bytes = parse_bytes(c, arg); break;
      case 'e': o.max_bytes = parse_bytes(c, arg); break;
      case 'f': o.step_factor = static_cast<std::size_t>(parse_integer(c, arg, 2, 1 << 20)); break;
      case 'n': o.iters = static_cast<int>(parse_integer(c, arg, 1, 1 << 30)); break;
      case 'w': o.warmup = static_cast<int>(parse_integer(c, arg, 0, 1 << 30)); break;
      case 'c': o.check = parse_bool(c, arg); break;
      case 'd': o.type = parse_choice(c, arg, tutti::all_dtypes, [](dtype t) { return tutti::name_of(t); }, "datatype"); break;
      case 'o': o.reduction = parse_choice(c, arg, tutti::all_ops, [](op x) { return tutti::name_of(x); }, "op"); break;
      case 't': o.ranks = static_cast<int>(parse_integer(c, arg, 1, 1024)); o.ranks_given = true; break;
      case 'C':
        o.coll = &parse_choice(c, arg, collectives, [](const collective_info& x) { return x.name; }, "collective");
        break;
      case 'r': o.root = static_cast<int>(parse_integer(c, arg, 0, 1023)); root_given = true; break;
      case 'i': o.in_place = parse_bool(c, arg); break;
      case 'a': o.algorithm = arg; break;  // checked against the table of runners in main
      case 'T': o.transport = parse_choice(c, arg, transports, [](transport_kind t) { return name_of(t); }, "transport"); break;
      case 'R': o.registered = parse_bool(c, arg); break;
      case 'M': o.membw = parse_bool(c, arg); break;
      case 'K': o.ranks_per_node = static_cast<int>(parse_integer(c, arg, 1, 1024)); break;
      case 'J':
        throw usage_error{"-J: JSON output is not available: this build has no nlohmann/json "
                          "(Debian package nlohmann-json3-dev)"};
      case 'h': print_usage(stdout); std::exit(0);
      case ':': throw usage_error{flag_name(optopt ? optopt : '?') + " needs a value"};
      default:
        throw usage_error{optopt ? "unknown option " + flag_name(optopt)
                                 : "unknown option '" + std::string(argv[optind - 1]) + "'"};
    }
  }
  if (optind < argc) throw usage_error{"unexpected argument '" + std::string(argv[optind]) + "'"};
  if (o.min_bytes == 0) throw usage_error{"-b 0: the smallest size must be at least 1 byte"};
  if (o.min_bytes > o.max_bytes)
    throw usage_error{"-b " + std::to_string(o.min_bytes) + " is larger than -e " + std::to_string(o.max_bytes)};
  if (o.registered && o.transport != transport_kind::shm)
    throw usage_error{"-R 1: registered buffers need -T shm (transport::inproc has no registered memory)"};
  if (o.transport == transport_kind::inproc) check_root(o, "-t");
  if (root_given && !o.coll->rooted)
    throw usage_error{"-r: " + std::string(o.coll->name) + " has no root (only broadcast and reduce do)"};
  if (o.ranks_per_node && o.transport != transport_kind::inproc)
    throw usage_error{"-K: with -T " + std::string(name_of(o.transport)) +
                      " the launcher places ranks on nodes (real hosts, or tutti-run --ranks-per-node " +
                      std::to_string(o.ranks_per_node) + " -n N -- tutti-bench -T shm ...)"};
  return o;
}

}  // namespace bench
