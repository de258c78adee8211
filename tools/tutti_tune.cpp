//! @file tutti_tune.cpp  tutti-tune: measures every candidate algorithm on this machine and writes
//! the tuning table algorithm::tuned<...> reads; explains, checks and exports tables.
//!
//! Started like the job (tutti-run, mpirun, srun, torchrun-style variables): every process is one
//! rank. It builds ONE communicator of tuned<every candidate for the transport> and measures each
//! candidate (and knob variant, tools/tune/contenders.hpp) through comm.algorithm_control().force(),
//! so the collectives measured are exactly the ones tuned<...> will dispatch to. The sweep
//! (tools/tune/sweep.hpp) interleaves repeats; rank 0 turns the points into rows with the honest
//! rule (tuner/choose.hpp) and writes the table (tuner/table_write.hpp).
//!
//! This file holds the runners, one per transport, and main. The modes that need no launcher
//! (--explain, --check, --export) are in tools/tune/modes.hpp.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <tutti/algorithm/automatic.hpp>
#include <tutti/algorithm/tuned_sets.hpp>
#include <tutti/bootstrap/rank_info.hpp>
#include <tutti/communicator.hpp>
#include <tutti/transport/shm.hpp>
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
#include <tutti/transport/multi_node.hpp>
#endif

#include "tune/comm.hpp"
#include "tune/contenders.hpp"
#include "tune/files.hpp"
#include "tune/make_table.hpp"
#include "tune/modes.hpp"
#include "tune/options.hpp"
#include "tune/provenance.hpp"
#include "tune/sweep.hpp"
#include "tune/versus.hpp"

namespace {

using namespace tune;
namespace alg = tutti::algorithm;

//! The candidates per transport (algorithm/tuned_sets.hpp): what tutti-bench and tutti-fusion-bench
//! run as --algorithm tuned, so they read the tables this writes.
using shm_candidates = alg::tuned_on_one_host;
using multi_node_candidates = alg::tuned_across_hosts;

//! What algorithm::automatic runs over `Transport` with `where` (the rule's default candidate):
//! its flat choice on one host; across nodes hierarchical<direct, ring> when nodes are even and hold
//! several ranks, else ring.
template <class Transport>
std::string automatic_choice(const tutti::tuner::layout& where) {
  return std::string(alg::automatic::choice_name<Transport>(where.ranks_per_node));
}

//! Refusals before the bootstrap (which waits for every rank).
tutti::rank_info started_as_job(const options& o) {
  tutti::rank_info info = tutti::rank_info_from_env();
  if (info.world_size < 2)
    throw usage_error{"tutti-tune measures collectives between ranks, and " +
                      (info.launcher == "none" ? std::string("no launcher started this one (no TUTTI_RANK, TUTTI_WORLD_SIZE)")
                                               : "the launcher (" + info.launcher + ") started 1 rank") +
                      "; start it like the job: tutti-run -n 4 -- tutti-tune --transport " + o.transport};
  // --merge FILE: refuse a bad table now, not after the sweep; a missing one starts a new table.
  if (info.rank == 0 && !o.merge.empty() && std::filesystem::exists(o.merge)) (void)tutti::tuner::read_table_file(o.merge);
  if (info.rank == 0)  // --pool: every earlier launch's table must be there and readable
    for (const auto& f : o.pool) (void)tutti::tuner::read_table_file(f);
  // --versus FILE: the communicator's tuned<...> reads FILE (every rank; its prepare agrees the hash).
  if (!o.versus.empty()) {
    const std::string path = o.versus;
    alg::tuned_table::source_override() = [path](int, std::string_view) { return alg::tuned_table::read_file(path); };
    return info;
  }
  // The sweep forces every candidate itself: the communicator's own table is an empty one, the
  // same on every rank whatever TUTTI_TUNING_FILE or the built-in table hold (tuned<...>'s table
  // source hook, tuned/table_source.hpp).
  if (info.rank == 0 && std::getenv("TUTTI_TUNING_FILE"))
    std::fprintf(stderr, "tutti-tune: note: TUTTI_TUNING_FILE is not read while tuning\n");
  static const auto none = [] {
    auto t = std::make_shared<tutti::tuner::table>();
    t->source = "tutti-tune's empty table (every candidate is forced)";
    return std::shared_ptr<const tutti::tuner::table>(std::move(t));
  }();
  alg::tuned_table::source_override() = [](int, std::string_view) { return none; };
  return info;
}

//! --versus: rank 0 writes the report; every rank returns the verdict (1: the goal is missed).
int report_versus(tune_comm& a, const options& o, const std::vector<series>& all, const tutti::tuner::layout& where,
                  const sweep_report& report) {
  double missed[1] = {0};
  if (a.rank() == 0) {
    const versus_result r = versus_report(all, o.versus, where, a.candidates(), "`" + o.command + "`: " + report.text);
    missed[0] = r.met ? 0 : 1;
    if (o.output_given) {
      write_file(o.output, r.text);
      std::fprintf(stderr, "tutti-tune: the comparison is in %s (%s)\n", o.output.c_str(), r.met ? "goal met" : "goal missed");
    } else {
      std::fputs(r.text.c_str(), stdout);
    }
  }
  a.max_over_ranks(missed);
  return missed[0] ? 1 : 0;
}

//! Every rank: the sweep; rank 0: the table. All ranks return the same status.
template <class Transport, class Comm>
int tune_on(Comm& comm, const options& o, const tutti::rank_info& info, std::uint64_t stage_bytes) {
  comm_adapter<Comm> a(comm);
  const tutti::tuner::layout where = a.layout();
  const std::vector<std::uint64_t> sizes = sweep_sizes(o);
  const std::uint64_t always = std::max<std::uint64_t>(std::uint64_t{1} << 30, sizes.back());
  std::vector<series> all;
  const bool versus = !o.versus.empty();
  for (auto c : o.collectives)
    for (auto t : o.dtypes) {
      auto list = contenders_for(a.candidates(), c, where.world, o.knob_variants, always, stage_bytes);
      all.push_back({c, t, versus ? versus_contenders(std::move(list)) : std::move(list), sizes, {}, 0});
    }
  if (info.rank == 0)
    std::fprintf(stderr, "tutti-tune: %s, world %d (%d node(s) x %d ranks), %zu sizes from %s to %s, %d repeats, budget %.0f s\n",
                 o.transport.c_str(), where.world, where.nodes, where.ranks_per_node, sizes.size(),
                 bytes_text(sizes.front()).c_str(), bytes_text(sizes.back()).c_str(), o.reps, o.budget_s);
  sweep run(a, o, all);
  const sweep_report report = run.run();
  if (versus) return report_versus(a, o, all, where, report);
  const std::string command = o.command + " (launcher " + info.launcher + ", " + std::to_string(where.world) +
                              " ranks; " + report.text + ")";
  tutti::tuner::provenance made = gather_provenance(a, o.transport, command);  // collective: every rank
  made.tune_seconds = report.seconds;
  double failed[1] = {0};
  if (info.rank == 0) {
    try {
      write_table_of(o, all, where, a.candidates(), automatic_choice<Transport>(where), std::move(made));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tutti-tune: error: %s\n", e.what());
      failed[0] = 1;
    }
  }
  a.max_over_ranks(failed);  // nobody leaves before rank 0 has written (or failed)
  return failed[0] ? 1 : 0;
}

int run_shm(const options& o) {
  using shm = tutti::transport::shm;
  const tutti::rank_info info = started_as_job(o);
  const auto sopt = tutti::transport::shm_options::from_env();
  tutti::communicator<shm, shm_candidates> comm(std::make_unique<shm>(info, sopt),
                                                tutti::communicator_options::from_env());
  return tune_on<shm>(comm, o, info, sopt.stage_bytes);
}

#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
int run_multi_node(const options& o) {
  using multi_node = tutti::transport::multi_node;
  const tutti::rank_info info = started_as_job(o);
  const auto sopt = tutti::transport::shm_options::from_env();  // what multi_node's shm inside a node uses
  tutti::communicator<multi_node, multi_node_candidates> comm(multi_node::from_env(),
                                                              tutti::communicator_options::from_env());
  return tune_on<multi_node>(comm, o, info, sopt.stage_bytes);
}
#endif

}  // namespace

namespace tune {
candidate_set candidates_for_layout(const tutti::tuner::layout& l) {
  static constexpr auto on_shm = shm_candidates::candidates_for<alg::context<tutti::transport::shm>>();
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
  static constexpr auto across = multi_node_candidates::candidates_for<alg::context<tutti::transport::multi_node>>();
  if (l.nodes > 1) return {across, multi_node_candidates::name, automatic_choice<tutti::transport::multi_node>(l)};
#endif
  return {on_shm, shm_candidates::name, automatic_choice<tutti::transport::shm>(l)};
}
}  // namespace tune

int main(int argc, char** argv) {
  try {
    const options o = parse(argc, argv);
    switch (o.what) {
      case mode::help: std::fputs(help_text, stdout); return 0;
      case mode::explain: return explain_mode(o);
      case mode::check: return check_mode(o);
      case mode::export_table: return export_mode(o);
      case mode::combine: return combine_mode(o);
      case mode::rechoose: return rechoose_mode(o);
      case mode::sweep: break;
    }
    if (o.transport == "shm") return run_shm(o);
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)
    return run_multi_node(o);
#else
    throw usage_error{"--transport multi_node needs UCX and OpenSSL, which this tutti-tune was built without"};
#endif
  } catch (const usage_error& e) {
    std::fprintf(stderr, "tutti-tune: error: %s\n(tutti-tune --help lists the options)\n", e.what.c_str());
    return 2;
  } catch (const tutti::invalid_argument& e) {
    std::fprintf(stderr, "tutti-tune: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-tune: error: %s\n", e.what());
    return 1;
  }
}
