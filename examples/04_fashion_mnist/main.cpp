//! @file main.cpp  Example 04: data-parallel training of an MLP on Fashion-MNIST with tutti's trainer.
//!
//!   tutti-run -n 2 build/examples/04_fashion_mnist/tutti_example_04_fashion_mnist
//!       --config examples/04_fashion_mnist/fashion_mnist.yaml
//!
//! The experiment is configured the way Determined's users configure theirs (the YAML file): slots,
//! global batch, epochs, validation and checkpoint periods, aggregation, gradient compression,
//! tensor fusion. Rank 0 shows a progress bar (images/s, loss, accuracy), one line per epoch with the
//! validation accuracy (on the 10,000 test images: Fashion-MNIST has no separate validation split),
//! writes metrics.csv and, where Python's matplotlib is present, curves.png into --out.
//!
//! The transport comes from the environment (trainer/with_transport.hpp): shared memory when the
//! launcher puts every rank on this host (tutti-run), multi_node — shm inside each host, UCX between —
//! when the job spans hosts (torchrun's variables, mpirun, srun); TUTTI_TRANSPORT overrides.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include <tutti/fusion/autotuned.hpp>
#include <tutti/trainer/from_config.hpp>
#if TUTTI_EXAMPLE_MULTI_NODE
#include <tutti/trainer/with_transport.hpp>
#endif
#include <tutti/tutti.hpp>

#include "mlp.hpp"

namespace {

using fashion_mnist::fashion_dataset;
using fashion_mnist::mlp;

struct arguments {
  std::string config, data = "/usr/share/datasets/fashion-mnist", out = "fashion-mnist-run";
  std::size_t max_batches = 0;  //!< overrides searcher.max_length (short runs in tests)
  std::size_t train_records = 0;  //!< the first N training images only (short runs)
  std::string save_parameters;    //!< rank 0 writes the final parameters there (float32, in order): tests compare runs
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: tutti-run -n SLOTS tutti_example_04_fashion_mnist --config FILE.yaml [--data DIR]\n"
               "       [--out DIR] [--max-batches N] [--train-records N] [--save-parameters FILE]\n",
               why);
  std::exit(2);
}

arguments parse(int argc, char** argv) {
  arguments a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + flag).c_str());
      return argv[++i];
    };
    if (flag == "--config") a.config = value();
    else if (flag == "--data") a.data = value();
    else if (flag == "--out") a.out = value();
    else if (flag == "--max-batches") a.max_batches = std::stoul(value());
    else if (flag == "--train-records") a.train_records = std::stoul(value());
    else if (flag == "--save-parameters") a.save_parameters = value();
    else if (flag == "--help" || flag == "-h") usage("Fashion-MNIST with tutti's data-parallel trainer");
    else usage(("unknown argument " + flag).c_str());
  }
  if (a.config.empty()) usage("--config is required");
  return a;
}

//! One line that rewrites itself on a terminal, a line per tenth of an epoch otherwise.
class progress_bar {
 public:
  explicit progress_bar(std::size_t batches_per_epoch) : per_epoch_(batches_per_epoch), tty_(::isatty(2) != 0) {}
  void show(const tutti::trainer::step_report& r, double images_per_second) {
    const std::size_t in_epoch = (r.batches - 1) % per_epoch_ + 1;
    const int filled = static_cast<int>(30 * in_epoch / per_epoch_);
    const bool tenth = in_epoch % std::max<std::size_t>(1, per_epoch_ / 10) == 0;
    if (!tty_ && !tenth) return;
    std::fprintf(stderr, "%sepoch %3zu [%.*s%*s] %5.1f%%  %7.0f img/s  loss %.4f  acc %5.2f%%%s",
                 tty_ ? "\r" : "", static_cast<std::size_t>(r.epoch - 1e-9) + 1, filled,
                 "##############################", 30 - filled, "", 100.0 * static_cast<double>(in_epoch) / static_cast<double>(per_epoch_),
                 images_per_second, r.training.at("loss"), 100 * r.training.at("accuracy"), tty_ ? "" : "\n");
    std::fflush(stderr);
  }
  void end_line() {
    if (tty_) std::fputc('\n', stderr);
  }

 private:
  std::size_t per_epoch_;
  bool tty_;
};

//! The codecs gradient_compression may select here: Determined's false and true. Each codec listed
//! compiles train() again (a communicator, its fusion engine and the trainer); list more, or use
//! tutti::trainer::all_codecs, to offer bf16, int8, topk and onebit too (docs/trainer.md).
using codecs = tutti::trainer::codec_list<tutti::codec::none, tutti::codec::fp16>;

template <class Codec, class Transport>
int train(const arguments& args, tutti::trainer::experiment_config& cfg, const std::string& transport_reason) {
  using comm_t = tutti::communicator<Transport, tutti::algorithm::automatic, Codec, tutti::fusion::autotuned<>>;
  // Everything the configuration decides comes first, so that a misspelt hyperparameter is refused
  // before any rank starts its communicator (and waits for the others).
  mlp model(static_cast<std::uint64_t>(cfg.number("model_seed", 7)));
  std::vector<bool> one_d_flags;
  for (const auto& p : model.parameters()) one_d_flags.push_back(p.name.ends_with(".bias"));
  const std::unique_ptr<bool[]> is_1d(new bool[one_d_flags.size()]);
  for (std::size_t i = 0; i < one_d_flags.size(); ++i) is_1d[i] = one_d_flags[i];
  auto optimizer = tutti::trainer::optimizer_from(cfg, std::span<const bool>(is_1d.get(), one_d_flags.size()));
  const auto schedule = tutti::trainer::schedule_from(cfg);
  auto options = tutti::trainer::options_from(cfg, schedule);  // with slots_per_trial: the trainer checks the job
  if (args.max_batches) options.max_batches = args.max_batches;
  cfg.check_hyperparameters_used();

  auto comm = comm_t::from_env();
  const bool chief = comm.rank() == 0;
  if (chief) {
    std::string transport = std::string(Transport::name) + " (" + transport_reason + ")";
    if constexpr (requires { comm.transport().network(); })
      transport += "; hosts " + comm.transport().nodes().describe() + "; network " + comm.transport().network();
    std::fprintf(stderr, "fashion-mnist: transport %s\n", transport.c_str());
  }
  options.announce = [chief](const std::string& what) {
    if (chief) std::fprintf(stderr, "fashion-mnist: %s\n", what.c_str());
  };
  auto train_set = fashion_dataset::load(args.data, "train", args.train_records ? args.train_records : SIZE_MAX);
  auto test_set = fashion_dataset::load(args.data, "t10k");

  tutti::trainer::data_parallel_trainer<comm_t, mlp, tutti::trainer::any_optimizer> trainer(comm, model, optimizer, options);
  const auto& ctx = trainer.context();
  const std::size_t per_epoch = train_set.size() / ctx.get_global_batch_size();
  if (chief) {
    std::fprintf(stderr,
                 "fashion-mnist: %zu slots, global batch %zu (%zu per slot%s), %zu batches (%.1f epochs of %zu), "
                 "optimizer %s, lr %.4g scaled to %.4g, codec %s, fusion %s\n",
                 ctx.plan.slots, ctx.get_global_batch_size(), ctx.get_per_slot_batch_size(),
                 ctx.plan.dropped ? (", " + std::to_string(ctx.plan.dropped) + " dropped").c_str() : "",
                 options.max_batches, static_cast<double>(options.max_batches) / static_cast<double>(per_epoch), per_epoch,
                 optimizer.description().c_str(), cfg.number("learning_rate", 0.1), schedule.scaled_lr(),
                 std::string(Codec::name).c_str(), cfg.optimizations.auto_tune_tensor_fusion ? "autotuned" : "threshold");
  }

  std::filesystem::create_directories(args.out);
  std::ofstream csv;
  if (chief) {
    csv.open(std::filesystem::path(args.out) / "metrics.csv");
    csv << "kind,batches,epoch,learning_rate,loss,accuracy,images_per_s,step_ms,compute_ms,exposed_comm_ms,overlapped_comm_ms\n";
  }
  progress_bar bar(per_epoch);
  double final_accuracy = 0;
  trainer.fit(
      train_set, test_set,
      [&](const tutti::trainer::step_report& r) {
        if (!chief) return;
        const double ips = static_cast<double>(r.records) / r.step_seconds;
        bar.show(r, ips);
        csv << "train," << r.batches << ',' << r.epoch << ',' << r.learning_rate << ',' << r.training.at("loss") << ','
            << r.training.at("accuracy") << ',' << ips << ',' << 1e3 * r.step_seconds << ',' << 1e3 * r.compute_seconds
            << ',' << 1e3 * r.exposed_seconds << ',' << 1e3 * r.overlapped_seconds << '\n';
      },
      [&](const tutti::trainer::validation_report& v) {
        final_accuracy = v.validation.at("accuracy");
        if (!chief) return;
        bar.end_line();
        std::fprintf(stderr, "epoch %5.2f: validation loss %.4f, accuracy %.2f%%\n", v.epoch, v.validation.at("loss"),
                     100 * v.validation.at("accuracy"));
        csv << "validation," << v.batches << ',' << v.epoch << ",," << v.validation.at("loss") << ','
            << v.validation.at("accuracy") << ",,,,,\n";
        csv.flush();
      });
  if (chief && !args.save_parameters.empty()) {
    std::ofstream raw(args.save_parameters, std::ios::binary);
    for (const auto& p : model.parameters())
      raw.write(reinterpret_cast<const char*>(p.value.data()), static_cast<std::streamsize>(p.value.size_bytes()));
    if (!raw.flush()) throw std::runtime_error("--save-parameters " + args.save_parameters + ": cannot write it");
  }
  if (chief) {
    std::printf("fashion-mnist: test accuracy %.2f%%\n", 100 * final_accuracy);
    csv.close();
    const std::string plot = std::string(TUTTI_EXAMPLE_DIR) + "/plot.py";
    const std::string cmd = "python3 '" + plot + "' '" + args.out + "/metrics.csv' '" + args.out + "/curves.png'";
    if (std::system(cmd.c_str()) != 0)
      std::fprintf(stderr, "fashion-mnist: no curves.png (%s failed: is matplotlib installed?)\n", cmd.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const auto args = parse(argc, argv);
    auto cfg = tutti::trainer::experiment_config::load(args.config);
    const bool chief = tutti::rank_info_from_env().rank == 0;  // any launcher's variables
    for (const auto& w : cfg.warnings)
      if (chief) std::fprintf(stderr, "fashion-mnist: warning: %s\n", w.c_str());
    for (const auto& line : tutti::trainer::apply_environment(cfg))
      if (chief) std::fprintf(stderr, "fashion-mnist: %s\n", line.c_str());
#if TUTTI_EXAMPLE_MULTI_NODE
    const auto transport = tutti::trainer::transport_from_env();
    return tutti::trainer::with_codec<codecs>(cfg.optimizations.gradient_compression, [&]<class Codec>() {
      return tutti::trainer::with_transport(transport.kind, [&]<class Transport>() {
        return train<Codec, Transport>(args, cfg, transport.reason);
      });
    });
#else
    return tutti::trainer::with_codec<codecs>(cfg.optimizations.gradient_compression, [&]<class Codec>() {
      return train<Codec, tutti::transport::shm>(args, cfg, "built without UCX: one host only");
    });
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fashion-mnist: %s\n", e.what());
    return 1;
  }
}
