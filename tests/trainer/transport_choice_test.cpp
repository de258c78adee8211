//! Which transport a job's environment calls for (trainer/transport_choice.hpp): the same answer
//! on every rank, from what the launcher tells every rank alike.
#include <doctest/doctest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>

#include <tutti/trainer/transport_choice.hpp>

using tutti::trainer::transport_from_env;
using tutti::trainer::transport_kind;

namespace {

//! Sets the given variables for one scope, with every launcher variable cleared first.
struct launcher_env {
  explicit launcher_env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    clear();
    for (const auto& [k, v] : vars) ::setenv(k, v, 1);
  }
  ~launcher_env() { clear(); }
  launcher_env(const launcher_env&) = delete;
  launcher_env& operator=(const launcher_env&) = delete;
  static void clear() {
    for (const char* v : names) ::unsetenv(v);
  }

 private:
  static constexpr const char* names[] = {
      "TUTTI_TRANSPORT", "TUTTI_RANK", "TUTTI_WORLD_SIZE", "TUTTI_LOCAL_RANK", "TUTTI_LOCAL_SIZE", "TORCHELASTIC_RUN_ID",
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
      "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID",
      "MPI_LOCALNRANKS", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_JOB_NUM_NODES"};
};

}  // namespace

TEST_CASE("transport_from_env: torchrun's local world smaller than the job means multi_node") {
  launcher_env env({{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}});
  const auto d = transport_from_env();
  CHECK(d.kind == transport_kind::multi_node);
  CHECK(d.reason == "2 of the job's 4 ranks on this host (launcher torchrun)");
}

TEST_CASE("transport_from_env: every rank on one host means shm (tutti-run, torchrun, Open MPI)") {
  {
    launcher_env env({{"TUTTI_RANK", "1"}, {"TUTTI_WORLD_SIZE", "2"}, {"TUTTI_LOCAL_RANK", "1"}, {"TUTTI_LOCAL_SIZE", "2"}});
    const auto d = transport_from_env();
    CHECK(d.kind == transport_kind::shm);
    CHECK(d.reason == "all 2 ranks on this host (launcher tutti-run)");
  }
  {
    launcher_env env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}});
    CHECK(transport_from_env().kind == transport_kind::shm);
  }
  {
    launcher_env env({});
    const auto d = transport_from_env();
    CHECK(d.kind == transport_kind::shm);
    CHECK(d.reason == "all 1 rank on this host (launcher none)");
  }
}

TEST_CASE("transport_from_env: Open MPI's local size and Slurm's node count spread the job over hosts") {
  {
    launcher_env env({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}});
    const auto d = transport_from_env();
    CHECK(d.kind == transport_kind::multi_node);
    CHECK(d.reason == "1 of the job's 4 ranks on this host (launcher Open MPI)");
  }
  {
    // srun without --ntasks-per-node: no local size, but the node count says so.
    launcher_env env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}, {"SLURM_JOB_NUM_NODES", "2"}});
    const auto d = transport_from_env();
    CHECK(d.kind == transport_kind::multi_node);
    CHECK(d.reason == "SLURM_JOB_NUM_NODES=2");
  }
}

TEST_CASE("transport_from_env: TUTTI_TRANSPORT overrides the launcher; an unknown one is refused, naming it") {
  {
    launcher_env env({{"TUTTI_TRANSPORT", "multi_node"}, {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "2"}});
    CHECK(transport_from_env().kind == transport_kind::multi_node);
  }
  {
    launcher_env env({{"TUTTI_TRANSPORT", "shm"}, {"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}});
    CHECK(transport_from_env().kind == transport_kind::shm);
  }
  {
    launcher_env env({{"TUTTI_TRANSPORT", "ucx"}, {"RANK", "3"}, {"WORLD_SIZE", "4"}});
    CHECK_THROWS_WITH_AS(transport_from_env(),
                         "rank 3: TUTTI_TRANSPORT='ucx' is not a transport a program can choose at run time: shm or multi_node "
                         "(unset: multi_node when the launcher spreads the job over hosts, else shm)",
                         tutti::invalid_argument);
  }
}
