//! @file model_check.cpp  tutti-model-check: the cost model fitted to a tuning table's samples, and each sample predicted against its measurement.
//!
//! Usage: tutti-model-check TABLE.json [--machine-cores N | --cores-per-node N] [--node-links L]
//!                          [--cache-bytes B] [--network-on-cpus 0|1] [--links-shaped 0|1] [--link-bucket B] [--argument-check exchange|epoch|none] [--dtype float|integer] [--holdout WxNxQ]... [--node-from SHM.json] [--csv FILE]
//! Prints the fitted alpha, beta, gamma and switch cost, every sample's measured and predicted
//! time and relative error, and per layout the RMS and largest error and how many samples are
//! within 20 % (issue 20's bar). --holdout leaves a layout (world x nodes x ranks per node) out of
//! the fit and predicts it from the others: how the model does on a layout it never saw, which is
//! what tuned<...> asks of it. --csv writes one line per sample for bench/tuner/model_check.py's plot.
//! --link-bucket B (with --links-shaped 1): the links are token buckets of B bytes (tc's tbf burst;
//! tuner/shaped_link.hpp): a call takes max(the unshaped schedule, the link), fitted by regimes.
//! Computes only; measures nothing.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#if __has_include(<tutti/tuner/table_json.hpp>)
#include <tutti/tuner/fit_table.hpp>
#include <tutti/tuner/table_json.hpp>
#define TUTTI_MODEL_CHECK_BUILT 1
#endif

#if TUTTI_MODEL_CHECK_BUILT
namespace {
using namespace tutti::tuner;

std::string layout_text(const layout& w) {
  return std::to_string(w.world) + "x" + std::to_string(w.nodes) + "x" + std::to_string(w.ranks_per_node);
}
std::string tuning_text(const std::vector<tuning_value>& t) {
  std::string s;
  for (const auto& v : t) s += (s.empty() ? "" : " ") + v.name + "=" + std::to_string(v.value);
  return s;
}

struct error_stats {
  double sum_sq = 0, max = 0;
  int count = 0, within_20 = 0;
  void add(double e) {
    sum_sq += e * e, max = std::max(max, std::abs(e)), ++count;
    within_20 += std::abs(e) <= 0.2;
  }
};

int usage() {
  std::fprintf(stderr,
               "usage: tutti-model-check TABLE.json [--machine-cores N | --cores-per-node N] [--node-links L]\n"
               "                         [--cache-bytes B] [--network-on-cpus 0|1] [--links-shaped 0|1] [--link-bucket B] [--argument-check exchange|epoch|none]\n"
               "                         [--dtype float|integer] [--holdout WxNxQ]... [--node-from SHM.json] [--csv FILE]\n");
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string path = argv[1];
  fit_options o;
  o.of_class = dtype_class::floating;
  std::vector<std::string> holdouts;
  std::string csv_path, node_from;
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (i + 1 >= argc) return usage();
    const char* v = argv[++i];
    if (a == "--machine-cores") o.machine_cores = std::atof(v);
    else if (a == "--cores-per-node") o.cores_per_node = std::atof(v);
    else if (a == "--node-links") o.machine.node_links = std::atof(v);
    else if (a == "--cache-bytes") o.machine.cache_bytes = std::atof(v);
    else if (a == "--network-on-cpus") o.machine.network_on_cpus = std::string_view(v) == "1";
    else if (a == "--links-shaped") o.machine.links_shaped = std::string_view(v) == "1";
    else if (a == "--link-bucket") o.machine.token_bucket = true, o.machine.bucket_bytes = std::atof(v);
    else if (a == "--argument-check")
      o.machine.check = std::string_view(v) == "epoch" ? argument_check::epoch
                        : std::string_view(v) == "none" ? argument_check::none
                                                        : argument_check::exchange;
    else if (a == "--dtype") o.of_class = std::string_view(v) == "integer" ? dtype_class::integer : dtype_class::floating;
    else if (a == "--holdout") holdouts.emplace_back(v);
    else if (a == "--node-from") node_from = v;
    else if (a == "--csv") csv_path = v;
    else return usage();
  }
  try {
    if (!node_from.empty()) {  // the node's parameters from a shm table of the same machine, fitted as shm tables are
      fit_options shm = o;
      shm.machine.network_on_cpus = false, shm.machine.links_shaped = false, shm.machine.token_bucket = false;
      shm.machine.check = argument_check::epoch;
      const table n = read_table_file(node_from);
      const auto node = fit_samples_with_residuals(n.samples, shm);
      o.held = node_parameters_of(node.fit.parameters);
      std::printf("# node parameters held at %s's fit (rms %.1f %%)\n", node_from.c_str(), 100 * node.model.rms_relative_error);
    }
    const table t = read_table_file(path);
    std::vector<sample> fitted_on;
    for (const auto& s : t.samples) {
      bool held = false;
      for (const auto& h : holdouts) held = held || layout_text(s.where) == h;
      if (!held) fitted_on.push_back(s);
    }
    const auto r = fit_samples_with_residuals(fitted_on, o);
    cost_parameters p = parameters_of(r.model);
    p.machine = o.machine;
    p.link = r.fit.parameters.link;  // a table's model has no place for a shaped link's
    std::printf("# %s: %zu samples, %zu fitted (%zu left out: no formula, other dtype class or no time)%s\n", path.c_str(),
                t.samples.size(), r.residuals.size(), r.left_out,
                holdouts.empty() ? "" : ", held-out layouts predicted from the others");
    std::printf("alpha_intra %.4g s  beta_intra %.4g s/B (%.3g GB/s)  alpha_inter %.4g s  beta_inter %.4g s/B (%.3g GB/s)\n"
                "gamma %.4g s/B (%.3g GB/s)  alpha_sync %.4g s  base_latency %.4g s  switch_cost %.4g s  memory_beta %.4g s/B (cache %.0f B)  fit rms %.1f %%  max %.1f %%\n\n",
                p.intra.alpha, p.intra.beta, p.intra.beta > 0 ? 1e-9 / p.intra.beta : 0.0, p.inter.alpha, p.inter.beta,
                p.inter.beta > 0 ? 1e-9 / p.inter.beta : 0.0, p.gamma, p.gamma > 0 ? 1e-9 / p.gamma : 0.0, p.alpha_sync, p.base_latency, p.switch_cost, p.memory_beta, p.machine.cache_bytes,
                100 * r.model.rms_relative_error, 100 * r.model.max_relative_error);
    if (o.machine.links_shaped && o.machine.token_bucket) {  // tuner/shaped_link.hpp
      const auto& l = p.link;
      const auto per_s = [](double beta) { return beta > 0 ? 1e-6 / beta : 0.0; };
      std::printf("token-bucket link (bucket %.0f B): within the bucket %.4g s/B (%.1f MB/s)  beyond it %.4g s/B (%.1f MB/s, "
                  "efficiency %.3f)  beyond it in exchange steps %.4g s/B (%.1f MB/s, efficiency %.3f of the paced rate)  "
                  "%zu of %zu samples paced by the link\n\n",
                  o.machine.bucket_bytes, l.beta, per_s(l.beta), l.paced_beta, per_s(l.paced_beta),
                  l.paced_beta > 0 ? l.beta / l.paced_beta : 0.0, l.exchange_beta, per_s(l.exchange_beta),
                  l.exchange_beta > 0 ? l.paced_beta / l.exchange_beta : 0.0, r.fit.link_bound, r.residuals.size());
    }

    std::FILE* csv = csv_path.empty() ? nullptr : std::fopen(csv_path.c_str(), "w");
    if (!csv_path.empty() && !csv) throw tutti::invalid_argument("cannot write " + csv_path);
    if (csv) std::fprintf(csv, "collective,layout,algorithm,tuning,bytes,measured_us,predicted_us,relative_error,held_out\n");
    std::printf("| collective | layout | algorithm | tuning | bytes | measured µs | predicted µs | error |\n"
                "|:---|:---|:---|:---|---:|---:|---:|---:|\n");
    std::map<std::string, error_stats> by_layout;
    for (const auto& s : t.samples) {
      if (o.of_class && s.dtypes != *o.of_class) continue;
      const auto predicted = predicted_seconds(p, s.measured.algorithm, s.collective_kind, s.where, static_cast<double>(s.bytes),
                                               o.cores_for(s.where), s.measured.tuning);
      if (!predicted || !(s.measured.median_us > 0)) continue;
      const double measured = s.measured.median_us, pred = *predicted * 1e6, e = (pred - measured) / measured;
      const std::string where = layout_text(s.where);
      bool held = false;
      for (const auto& h : holdouts) held = held || where == h;
      by_layout[where + (held ? " (held out)" : "")].add(e);
      std::printf("| %s | %s | %s | %s | %llu | %.2f | %.2f | %+.1f %% |\n", std::string(tutti::name_of(s.collective_kind)).c_str(),
                  where.c_str(), s.measured.algorithm.c_str(), tuning_text(s.measured.tuning).c_str(),
                  static_cast<unsigned long long>(s.bytes), measured, pred, 100 * e);
      if (csv)
        std::fprintf(csv, "%s,%s,\"%s\",\"%s\",%llu,%.4f,%.4f,%.5f,%d\n", std::string(tutti::name_of(s.collective_kind)).c_str(),
                     where.c_str(), s.measured.algorithm.c_str(), tuning_text(s.measured.tuning).c_str(),
                     static_cast<unsigned long long>(s.bytes), measured, pred, e, held ? 1 : 0);
    }
    if (csv) std::fclose(csv);
    std::printf("\n| layout | samples | rms error | max error | within 20 %% |\n|:---|---:|---:|---:|---:|\n");
    for (const auto& [where, st] : by_layout)
      std::printf("| %s | %d | %.1f %% | %.1f %% | %d (%.0f %%) |\n", where.c_str(), st.count, 100 * std::sqrt(st.sum_sq / st.count),
                  100 * st.max, st.within_20, 100.0 * st.within_20 / st.count);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-model-check: %s\n", e.what());
    return 1;
  }
}
#else
int main() {
  std::fprintf(stderr, "tutti-model-check: built without tutti/tuner/table_json.hpp (issue 20, branch 'table'); nothing to do\n");
  return 2;
}
#endif
