//! @file export_test.cpp  tuner/export_*.hpp: each output read back the way its peer reads it
//! (NCCL's example tuner plugin, UCC's score-string and ucc.conf parsers, Open MPI coll/tuned's
//! classic and JSON readers), and every range and algorithm checked against the table.
#include <doctest/doctest.h>

// The table's own headers first, where they exist (after branch table): they declare helpers of
// the same names in tuner:: (bytes_text, layout_text), which the exporters must never meet, not
// even by argument-dependent lookup.
#if __has_include(<tutti/tuner/choose.hpp>)
#include <tutti/tuner/choose.hpp>
#include <tutti/tuner/explain.hpp>
#include <tutti/tuner/interpolate.hpp>
#endif

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <tutti/tuner/export.hpp>
#include <vector>

#include "export_fixture.hpp"

using namespace tutti;
using namespace tutti::tuner;
using export_fixture::inf;
using export_fixture::make_row;

namespace {
table fixture() { return export_fixture::make(); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}
std::vector<std::string> split(const std::string& s, char by) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == by) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}
}  // namespace

// ---- NCCL: as plugins/tuner/example/plugin.c's loadConfig reads, then its first-match lookup ----
namespace {
struct nccl_config {
  std::string coll;
  std::uint64_t lo, hi;
  std::string algo, proto;
  int channels, nodes, ranks;
  friend bool operator==(const nccl_config&, const nccl_config&) = default;
};
std::vector<nccl_config> read_nccl(const std::string& text) {
  std::vector<nccl_config> out;
  for (const auto& line : lines_of(text)) {
    REQUIRE(line.size() < 255);  // fgets(line, 256): a longer line would come back in two pieces
    if (line.empty() || line[0] == '#') continue;
    const auto f = split(line, ',');
    REQUIRE(f.size() >= 8);
    REQUIRE(f.size() <= 10);
    const std::set<std::string> colls{"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
    const std::set<std::string> algos{"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
    CHECK(colls.count(f[0]) == 1);  // the plugin reads an unknown name as allreduce / ring
    CHECK(algos.count(f[3]) == 1);
    out.push_back({f[0], std::strtoull(f[1].c_str(), nullptr, 10), std::strtoull(f[2].c_str(), nullptr, 10), f[3], f[4],
                   std::atoi(f[5].c_str()), std::atoi(f[6].c_str()), std::atoi(f[7].c_str())});
  }
  return out;
}
std::string nccl_lookup(const std::vector<nccl_config>& configs, std::string_view coll, std::uint64_t bytes, int nodes,
                        int ranks) {
  for (const auto& c : configs)
    if (c.coll == coll && bytes >= c.lo && bytes <= c.hi && (c.nodes == -1 || c.nodes == nodes) &&
        (c.ranks == -1 || c.ranks == ranks))
      return c.algo;
  return "";
}
}  // namespace

TEST_CASE("export nccl: the plugin reads back every row that has an NCCL counterpart, bytes as NCCL counts them") {
  const table t = fixture();
  const std::string csv = to_nccl_csv(t);
  const auto configs = read_nccl(csv);
  const std::vector<nccl_config> expected{
      {"allreduce", 0, inf, "tree", "simple", -1, 1, 2},         // 1x2 tree: exact
      {"allreduce", 0, 2047, "tree", "simple", -1, 1, 4},        // 1x4 halving_doubling: nearest
      {"allreduce", 65536, inf, "ring", "simple", -1, 1, 4},     // direct 2048..65535: none
      {"reducescatter", 4080, inf, "ring", "simple", -1, 1, 4},  // per rank x 4; 0..1019: PAT needs 1 rank per node
      {"allgather", 0, inf, "ring", "simple", -1, 1, 4},
      {"allreduce", 0, 4095, "tree", "simple", -1, 2, 4},    // hierarchical<direct, tree>
      {"allreduce", 4096, inf, "ring", "simple", -1, 2, 4},  // automatic -> hierarchical<direct, ring>
      {"allgather", 0, inf, "ring", "simple", -1, 2, 4},
      {"allreduce", 0, inf, "ring", "simple", -1, 4, 4},     // hierarchical<direct, ring>, 1 rank per node
      {"reducescatter", 0, inf, "pat", "simple", -1, 4, 4},  // halving_doubling, 1 rank per node
      {"broadcast", 0, inf, "ring", "simple", -1, 4, 4},
  };
  CHECK(configs == expected);
  // what NCCL would do at the boundaries (b-1, b, b+1) and where tutti's choice has no counterpart
  CHECK(nccl_lookup(configs, "allreduce", 2047, 1, 4) == "tree");
  CHECK(nccl_lookup(configs, "allreduce", 2048, 1, 4).empty());
  CHECK(nccl_lookup(configs, "allreduce", 65535, 1, 4).empty());
  CHECK(nccl_lookup(configs, "allreduce", 65536, 1, 4) == "ring");
  CHECK(nccl_lookup(configs, "reducescatter", 4 * 1020 - 1, 1, 4).empty());
  CHECK(nccl_lookup(configs, "reducescatter", 4 * 1020, 1, 4) == "ring");
  CHECK(nccl_lookup(configs, "reducescatter", 4 * 1020 - 1, 4, 4) == "pat");
  CHECK(nccl_lookup(configs, "reducescatter", 4 * 1024, 1, 4) == "ring");
  CHECK(nccl_lookup(configs, "allreduce", 100, 3, 6).empty());  // a layout not in the table: NCCL's own choice
  // the rows left out say why, and the integer row is not written
  CHECK(csv.find("direct reads peers' memory in place") != std::string::npos);
  CHECK(csv.find("never asked about barrier") != std::string::npos);
  CHECK(csv.find("1 rows for other elements left out") != std::string::npos);
  CHECK(csv.find("automatic picks hierarchical<direct, ring> over multi_node") != std::string::npos);

  nccl_export_options ll;
  ll.protocol = "ll128";
  const auto with_ll128 = read_nccl(to_nccl_csv(t, ll));
  CHECK(with_ll128.front().proto == "ll128");
  CHECK(with_ll128.at(9).algo == "pat");
  CHECK(with_ll128.at(9).proto == "simple");  // NCCL has PAT with simple only
  ll.protocol = "LL";
  CHECK_THROWS_AS(to_nccl_csv(t, ll), invalid_argument);
}

TEST_CASE("export nccl: a long algorithm name never makes a line the plugin would split") {
  table t;
  t.rows.push_back(make_row(collective::allreduce, 0, inf, {8, 2, 4},
                            "hierarchical<hierarchical<" + std::string(300, 'x') + ", ring>, tree>"));
  for (const auto& line : lines_of(to_nccl_csv(t))) CHECK(line.size() <= 250);
}

// ---- UCC: ucc.conf as src/utils/ini.c reads it, tokens as ucc_coll_score_parse_str reads them ----
namespace {
struct ucc_token {
  std::string coll, mem, alg;
  std::uint64_t lo = 0, hi = 0;
  int team_lo = -1, team_hi = -1;  //!< no team-size qualifier: -1
  std::uint64_t score = 0;
  friend bool operator==(const ucc_token&, const ucc_token&) = default;
};
std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}
std::optional<std::uint64_t> memunits(const std::string& s) {  // ucs_str_to_memunits
  if (lower(s) == "inf") return inf;
  std::size_t at = 0;
  while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]))) ++at;
  if (at == 0) return std::nullopt;
  std::uint64_t v = std::strtoull(s.substr(0, at).c_str(), nullptr, 10);
  std::string unit = lower(s.substr(at));
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  if (unit == "k")
    v <<= 10;
  else if (unit == "m")
    v <<= 20;
  else if (unit == "g")
    v <<= 30;
  else if (!unit.empty())
    return std::nullopt;
  return v;
}
ucc_token parse_ucc_token(const std::string& text) {
  const std::set<std::string> colls{
      "allgather", "allgatherv", "allreduce", "alltoall", "alltoallv",      "barrier",         "bcast",   "fanin",
      "fanout",    "gather",     "gatherv",   "reduce",   "reduce_scatter", "reduce_scatterv", "scatter", "scatterv"};
  const std::set<std::string> mems{"host", "cuda", "cuda_managed", "rocm", "rocm_managed"};
  ucc_token t;
  bool have_score = false, have_range = false;
  for (const auto& q : split(text, ':')) {
    const auto ql = lower(q);
    if (t.coll.empty() && colls.count(ql))
      t.coll = ql;
    else if (t.mem.empty() && mems.count(ql))
      t.mem = ql;
    else if (!have_score && (ql == "inf" || (!q.empty() && q.find_first_not_of("0123456789") == std::string::npos))) {
      t.score = ql == "inf" ? inf : std::strtoull(q.c_str(), nullptr, 10);
      have_score = true;
    } else if (!have_range && split(q, '-').size() == 2 && memunits(split(q, '-')[0]) && memunits(split(q, '-')[1])) {
      t.lo = *memunits(split(q, '-')[0]);
      t.hi = *memunits(split(q, '-')[1]);
      have_range = true;
    } else if (t.team_lo < 0 && q.size() > 2 && q.front() == '[' && q.back() == ']') {
      const auto r = split(q.substr(1, q.size() - 2), '-');
      t.team_lo = std::atoi(r[0].c_str());
      t.team_hi = std::atoi(r.back().c_str());
    } else if (t.alg.empty() && !q.empty() && q[0] == '@') {
      t.alg = q.substr(1);
    } else {
      FAIL("UCC would refuse the qualifier '" << q << "' in '" << text << "'");
    }
  }
  CHECK(have_range);
  return t;
}
//! key "" is outside every section; values are the tokens of each TUNE variable.
std::map<std::string, std::map<std::string, std::vector<ucc_token>>> read_ucc_conf(const std::string& text) {
  std::map<std::string, std::map<std::string, std::vector<ucc_token>>> out;
  std::string section;
  for (auto line : lines_of(text)) {
    REQUIRE(line.size() < 8192);  // UCC_INI_MAX_LINE
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      REQUIRE(line.back() == ']');
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const auto eq = line.find_first_of("=:");  // ini.c splits a key from its value at '=' or ':'
    REQUIRE(eq != std::string::npos);
    REQUIRE(line[eq] == '=');
    CHECK(line.find(" ;") == std::string::npos);  // an inline comment would cut the value
    auto& tokens = out[section][line.substr(0, eq)];
    for (const auto& tk : split(line.substr(eq + 1), '#')) tokens.push_back(parse_ucc_token(tk));
  }
  return out;
}
}  // namespace

TEST_CASE("export ucc: each layout's section and the CL/HIER string read back as UCC reads them") {
  const table t = fixture();
  const std::string conf = to_ucc_conf(t);
  const auto read = read_ucc_conf(conf);
  const auto tok = [](std::string coll, std::uint64_t lo, std::uint64_t hi, std::string alg, int team = -1) {
    return ucc_token{std::move(coll), "host", std::move(alg), lo, hi, team, team, inf};
  };
  REQUIRE(read.count(""));
  CHECK(read.at("").at("UCC_CL_HIER_TUNE") == std::vector<ucc_token>{tok("allreduce", 0, 4095, "split_rail", 4),
                                                                     tok("allreduce", 4096, inf, "split_rail", 4)});
  CHECK(read.at("team_size=2 ppn=2 nnodes=1").at("UCC_TL_UCP_TUNE") ==
        std::vector<ucc_token>{tok("allreduce", 0, inf, "dbt")});
  CHECK(read.at("team_size=4 ppn=4 nnodes=1").at("UCC_TL_UCP_TUNE") ==
        std::vector<ucc_token>{
            tok("allreduce", 0, 2047, "sra_knomial"), tok("allreduce", 65536, inf, "ring"),       // direct: none
            tok("reduce_scatter", 0, 1019, "knomial"), tok("reduce_scatter", 1020, inf, "ring"),  // per rank in UCC too
            tok("allgather", 0, inf, "ring"),                                                     // x 4, still 0..inf
            tok("bcast", 0, 65535, "knomial"), tok("bcast", 65536, inf, "sag_knomial"),  // split at the crossover
            tok("alltoall", 0, 4 * 513 - 1, "bruck"),
            tok("alltoall", 4 * 513, inf, "pairwise"),  // row's 512 B knob, x 4
        });
  CHECK(read.at("team_size=4 ppn=2 nnodes=2").at("UCC_TL_UCP_TUNE") ==
        std::vector<ucc_token>{tok("allgather", 0, inf, "ring")});  // allreduce went to CL/HIER
  CHECK(read.at("team_size=4 ppn=1 nnodes=4").at("UCC_TL_UCP_TUNE") ==
        std::vector<ucc_token>{tok("allreduce", 0, inf, "ring"), tok("reduce_scatter", 0, inf, "knomial")});
  CHECK(conf.find("TL/UCP has no ring broadcast") != std::string::npos);
  CHECK(conf.find("TL/UCP has no tree barrier") != std::string::npos);

  // a UCC older than 1.8 has no allreduce ring and would drop the whole string: left to UCC
  ucc_export_options before_1_8;
  before_1_8.allreduce_ring = false;
  const auto old = read_ucc_conf(to_ucc_conf(t, before_1_8));
  CHECK(old.at("team_size=4 ppn=4 nnodes=1").at("UCC_TL_UCP_TUNE").at(1) == tok("reduce_scatter", 0, 1019, "knomial"));
  CHECK(old.at("team_size=4 ppn=1 nnodes=4").at("UCC_TL_UCP_TUNE") ==
        std::vector<ucc_token>{tok("reduce_scatter", 0, inf, "knomial")});
}

// ---- Open MPI classic: integers as ompi_coll_base_file_getnext_long reads them ----------------
namespace {
struct ompi_classic {
  struct msg_rule {
    long from, alg;
  };
  struct com_rule {
    long size;
    std::vector<msg_rule> rules;
  };
  std::map<long, std::vector<com_rule>> colls;  // collective id -> its blocks, in file order
};
std::vector<long> classic_numbers(const std::string& text) {  // fscanf("%li") and '#' to end of line
  std::vector<long> out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '#') {
      i = text.find('\n', i);
      if (i == std::string::npos) break;
    } else if (std::isdigit(static_cast<unsigned char>(text[i]))) {
      std::size_t j = i;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      CHECK((j - i == 1 || text[i] != '0'));  // %li would read a leading 0 as octal
      out.push_back(std::strtol(text.substr(i, j - i).c_str(), nullptr, 10));
      i = j;
    } else {
      CHECK((text[i] == ' ' || text[i] == '\n'));  // anything else outside a comment is a stray token
      ++i;
    }
  }
  return out;
}
ompi_classic read_classic(const std::string& text) {
  REQUIRE(text.rfind("rule-file-version-", 0) != 0);  // version 1: every release reads it
  const auto n = classic_numbers(text);
  std::size_t at = 0;
  const auto next = [&] {
    REQUIRE(at < n.size());
    return n[at++];
  };
  ompi_classic out;
  const long ncol = next();
  for (long c = 0; c < ncol; ++c) {
    auto& blocks = out.colls[next()];
    const long ncom = next();
    for (long s = 0; s < ncom; ++s) {
      ompi_classic::com_rule block{next(), {}};
      CHECK((blocks.empty() || blocks.back().size < block.size));
      const long nmsg = next();
      for (long m = 0; m < nmsg; ++m) {
        const long from = next(), alg = next(), faninout = next(), segsize = next();
        CHECK(faninout == 0);
        CHECK(segsize == 0);
        CHECK((m > 0 || from == 0));  // "must specify a rule for message size of zero upwards always first"
        CHECK((m == 0 || block.rules.back().from < from));
        block.rules.push_back({from, alg});
      }
      blocks.push_back(block);
    }
  }
  CHECK(at == n.size());
  return out;
}
//! Open MPI <= 5.0: the block with the largest size <= the communicator's, the rule with the
//! largest start <= the message's; 0: the fixed rules.
long classic_lookup(const ompi_classic& f, long coll, long comm_size, long bytes) {
  if (!f.colls.count(coll)) return 0;
  const ompi_classic::com_rule* block = nullptr;
  for (const auto& b : f.colls.at(coll))
    if (b.size <= comm_size) block = &b;
  if (!block) return 0;
  long alg = 0;
  for (const auto& r : block->rules)
    if (r.from <= bytes) alg = r.alg;
  return alg;
}
}  // namespace

TEST_CASE("export ompi: the classic rules file read back as Open MPI 5.0 reads it") {
  const std::string text = to_ompi_rules(fixture());
  const auto f = read_classic(text);
  CHECK(text.find("reduce on 1 node x 4 (world 4): nothing to say") != std::string::npos);
  CHECK(text.find("bcast on 4 nodes x 1 (world 4) not written") != std::string::npos);
  CHECK(f.colls.size() == 7);  // allgather, allreduce, alltoall, barrier, bcast, reduce_scatter(_block)
  // allreduce (2): world 2 tree -> nonoverlapping; world 4 = 1x4 (2x2 and 4x1 share its size)
  CHECK(classic_lookup(f, 2, 2, 0) == 2);
  CHECK(classic_lookup(f, 2, 2, 1 << 30) == 2);
  CHECK(classic_lookup(f, 2, 4, 2047) == 6);
  CHECK(classic_lookup(f, 2, 4, 2048) == 0);  // direct: no counterpart, fixed rules
  CHECK(classic_lookup(f, 2, 4, 65535) == 0);
  CHECK(classic_lookup(f, 2, 4, 65536) == 4);
  for (long other : {1L, 3L, 5L, 64L}) CHECK(classic_lookup(f, 2, other, 100) == 0);  // only measured sizes
  CHECK(classic_lookup(f, 0, 4, 12345) == 4);  // allgather: 1x4's ring (2x2's is left out)
  CHECK(f.colls.count(11) == 0);               // reduce: automatic = direct on 1x4, nothing to say
  // alltoall (3): Bruck up to the row's 512 B per block, times 4 ranks
  CHECK(classic_lookup(f, 3, 4, 4 * 513 - 1) == 3);
  CHECK(classic_lookup(f, 3, 4, 4 * 513) == 2);
  CHECK(classic_lookup(f, 6, 4, 0) == 6);      // barrier: tree
  CHECK(classic_lookup(f, 7, 4, 65535) == 6);  // bcast: binomial below the default 64 KiB
  CHECK(classic_lookup(f, 7, 4, 65536) == 8);
  CHECK(classic_lookup(f, 12, 4, 4 * 1020 - 1) == 2);  // reduce_scatter: per rank x 4
  CHECK(classic_lookup(f, 12, 4, 4 * 1020) == 3);
  CHECK(classic_lookup(f, 13, 4, 4 * 1020 - 1) == 3);
  CHECK(classic_lookup(f, 13, 4, 4 * 1020) == 0);  // reduce_scatter_block has no ring
}

// ---- Open MPI 6.0 JSON: a small reader, and coll/tuned's first-match lookup ------------------
namespace {
struct json {
  enum kind_t { null, number, string, array, object } kind = null;
  std::int64_t num = 0;
  std::string str;
  std::vector<json> items;
  std::vector<std::pair<std::string, json>> members;
  [[nodiscard]] const json& at(const std::string& key) const {
    for (const auto& [k, v] : members)
      if (k == key) return v;
    FAIL("no key " << key);
    return *this;
  }
  [[nodiscard]] bool has(const std::string& key) const {
    for (const auto& [k, v] : members)
      if (k == key) return true;
    return false;
  }
};
struct json_reader {
  const std::string& s;
  std::size_t i = 0;
  void space() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  char peek() {
    space();
    REQUIRE(i < s.size());
    return s[i];
  }
  void expect(char ch) {
    REQUIRE(peek() == ch);
    ++i;
  }
  std::string text() {
    expect('"');
    std::string out;
    while (s.at(i) != '"') {
      REQUIRE(s[i] != '\\');  // the writer needs no escapes
      out += s[i++];
    }
    ++i;
    return out;
  }
  json value() {
    json v;
    const char ch = peek();
    if (ch == '{') {
      v.kind = json::object;
      ++i;
      if (peek() == '}') return ++i, v;
      for (;;) {
        std::string key = text();
        expect(':');
        v.members.emplace_back(std::move(key), value());
        if (peek() == '}') return ++i, v;
        expect(',');
      }
    }
    if (ch == '[') {
      v.kind = json::array;
      ++i;
      if (peek() == ']') return ++i, v;
      for (;;) {
        v.items.push_back(value());
        if (peek() == ']') return ++i, v;
        expect(',');
      }
    }
    if (ch == '"') {
      v.kind = json::string;
      v.str = text();
      return v;
    }
    REQUIRE(std::isdigit(static_cast<unsigned char>(ch)));
    v.kind = json::number;
    std::size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    v.num = std::stoll(s.substr(i, j - i));
    i = j;
    return v;
  }
};
std::uint64_t size_field(const json& rule, const std::string& key, std::uint64_t absent) {
  if (!rule.has(key)) return absent;
  const json& v = rule.at(key);
  if (v.kind == json::string) {
    CHECK(lower(v.str) == "inf");
    return inf;
  }
  return static_cast<std::uint64_t>(v.num);
}
//! coll/tuned's read_rules_json + get_com_rule_ptr + get_target_method_params; "" = fixed rules.
std::string json_lookup(const json& root, const std::string& coll, int comm_size, std::string_view distribution,
                        std::uint64_t bytes) {
  const json& colls = root.at("collectives");
  if (!colls.has(coll)) return "";
  for (const json& com : colls.at(coll).items) {
    const std::string d = com.has("comm_rank_distribution") ? com.at("comm_rank_distribution").str : "any";
    if (d != "any" && d != distribution) continue;
    if (size_field(com, "comm_size_min", 0) > static_cast<std::uint64_t>(comm_size) ||
        size_field(com, "comm_size_max", inf) < static_cast<std::uint64_t>(comm_size))
      continue;
    for (const json& rule : com.at("rules").items)
      if (size_field(rule, "msg_size_min", 0) <= bytes && bytes <= size_field(rule, "msg_size_max", inf))
        return rule.at("alg").str;
    return "";  // the first matching communicator rule is the only one looked at
  }
  return "";
}
}  // namespace

TEST_CASE("export ompi: the 6.0 JSON rules read back with coll/tuned's first-match rules") {
  const std::string text = to_ompi_json(fixture());
  json_reader reader{text};
  const json root = reader.value();
  reader.space();
  CHECK(reader.i == text.size());
  CHECK(root.at("rule_file_version").num == 3);
  CHECK(root.at("module").str == "tuned");
  // every collective name is one mca_coll_base_name_to_colltype knows (not the schema's "reducescatter")
  const std::set<std::string> known{"allgather", "allreduce", "alltoall",       "barrier",
                                    "bcast",     "reduce",    "reduce_scatter", "reduce_scatter_block"};
  for (const auto& [name, rules] : root.at("collectives").members) CHECK(known.count(name) == 1);
  CHECK(json_lookup(root, "allreduce", 2, "single-node", 100) == "nonoverlapping");
  CHECK(json_lookup(root, "allreduce", 4, "single-node", 2047) == "rabenseifner");
  CHECK(json_lookup(root, "allreduce", 4, "single-node", 2048).empty());  // direct
  CHECK(json_lookup(root, "allreduce", 4, "single-node", 65536) == "ring");
  CHECK(json_lookup(root, "allreduce", 4, "one-per-node", 5) == "ring");  // 4x1: hierarchical<direct, ring> = ring
  CHECK(json_lookup(root, "allreduce", 4, "any", 5).empty());             // 2x2: hierarchical, coll/han's business
  CHECK(json_lookup(root, "allgather", 4, "any", 1 << 20) == "ring");
  CHECK(json_lookup(root, "alltoall", 4, "single-node", 4 * 513 - 1) == "modified_bruck");
  CHECK(json_lookup(root, "alltoall", 4, "single-node", 4 * 513) == "pairwise");
  CHECK(json_lookup(root, "reduce_scatter_block", 4, "single-node", 4 * 1020 - 1) == "recursive_halving");
  CHECK(json_lookup(root, "reduce_scatter_block", 4, "single-node", 4 * 1020).empty());
  CHECK(json_lookup(root, "bcast", 4, "one-per-node", 1) == "pipeline");  // 4x1's ring, apart from 1x4's
  CHECK(!root.at("collectives").has("reduce"));
  CHECK(json_lookup(root, "reduce_scatter", 4, "one-per-node", 4096) == "recursive_halving");  // 4x1's own row
  CHECK(json_lookup(root, "bcast", 4, "single-node", 65536) == "scatter_allgather");
  CHECK(json_lookup(root, "allreduce", 3, "single-node", 5).empty());
}

TEST_CASE("export: automatic and hierarchical resolve to what runs on the row's layout") {
  using exporting::parse_algorithm;
  using exporting::resolve;
  CHECK(parse_algorithm("hierarchical<hierarchical<direct, ring>, tree>").args[0].args[1].base == "ring");
  CHECK(parse_algorithm(" tuned<ring, direct> ").text() == "tuned<ring, direct>");
  CHECK_THROWS_AS(parse_algorithm("hierarchical<direct, ring"), invalid_argument);
  CHECK_THROWS_AS(parse_algorithm("ring>"), invalid_argument);
  CHECK(resolve(parse_algorithm("automatic"), {4, 1, 4}, "shm").name.text() == "direct");
  CHECK(resolve(parse_algorithm("automatic"), {4, 2, 2}, "multi_node").name.text() == "hierarchical<direct, ring>");
  CHECK(resolve(parse_algorithm("automatic"), {3, 2, 0}, "multi_node").name.text() == "ring");  // uneven nodes
  CHECK(resolve(parse_algorithm("automatic"), {4, 4, 1}, "multi_node").name.text() == "ring");  // one rank per node
  CHECK(resolve(parse_algorithm("automatic"), {4, 1, 4}, "inproc").name.text() == "ring");
  CHECK(resolve(parse_algorithm("automatic"), {4, 1, 4}, "").name.text() == "automatic");  // unknown: no counterpart
  CHECK(resolve(parse_algorithm("hierarchical<tree, ring>"), {4, 1, 4}, "").name.text() == "tree");
  CHECK(resolve(parse_algorithm("hierarchical<tree, ring>"), {4, 4, 1}, "").name.text() == "ring");
  // a row's own tuning value moves halving_doubling's crossover; the default otherwise
  row r = make_row(collective::broadcast, 0, inf, {4, 1, 4}, "halving_doubling");
  CHECK(exporting::halving_doubling_switch(r) == 64 * 1024);
  r.tuning = {{"halving_doubling.scatter_broadcast_bytes", 4096}};
  CHECK(exporting::halving_doubling_switch(r) == 4096);
  r.where = {2, 1, 2};
  CHECK(exporting::halving_doubling_switch(r) == inf);  // two ranks: always the binomial tree
  CHECK(exporting::scaled_max(1023, 4) == 4095);
  CHECK(exporting::scaled_min(1024, 4) == 4096);
  CHECK(exporting::scaled_max(inf, 4) == inf);
}

TEST_CASE("export: export_table picks a format by name, and refuses one it does not know") {
  const table t = fixture();
  CHECK(export_table(t, "nccl") == to_nccl_csv(t));
  CHECK(export_table(t, "ucc") == to_ucc_conf(t));
  CHECK(export_table(t, "ompi") == to_ompi_rules(t));
  CHECK(export_table(t, "ompi-json") == to_ompi_json(t));
  // the integer rows alone: the 1x2 ring
  CHECK(read_nccl(export_table(t, "nccl", dtype_class::integer)) ==
        std::vector<nccl_config>{{"allreduce", 0, inf, "ring", "simple", -1, 1, 2}});
  CHECK_THROWS_WITH_AS(export_table(t, "mpich"), doctest::Contains("nccl, ucc, ompi, ompi-json"), invalid_argument);
  table bad = t;
  bad.rows[3].algorithm = "hierarchical<direct, ring";
  bad.rows[3].line = 17;
  for (const char* format : {"nccl", "ucc", "ompi", "ompi-json"})
    CHECK_THROWS_WITH_AS(export_table(bad, format), doctest::Contains("row 4 (line 17): allreduce 2048-65535 B"),
                         invalid_argument);
}
