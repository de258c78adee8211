//! tuned<A...> over processes (fork_world: shm): every conformance suite, with the table that
//! switches candidates at 64 B, 4 KiB and 64 KiB, uncompressed and with fp16. tuned_test.cpp has
//! the same suites over threads and simulated nodes, and tuned's own behaviour. A file of its own
//! so that the sanitizer rotation builds it as a group of its own (tests/sanitizers.cmake): all
//! of tuned's suites in one file made the heaviest group by far (CI 27.9 minutes with it).
#include <doctest/doctest.h>

#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/halving_doubling.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/algorithm/tree.hpp>
#include <tutti/algorithm/tuned.hpp>
#include <tutti/codec/float16.hpp>
#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>

#include "support/tuned_tables.hpp"

namespace {
namespace alg = tutti::algorithm;
using namespace tutti::testing;

using processes = fork_world<alg::tuned<alg::ring, alg::direct, alg::halving_doubling, alg::tree>>;
// Codecs: every candidate carries them (tree does not, so it is left out).
using lossy_processes = fork_world<alg::tuned<alg::ring, alg::direct, alg::halving_doubling>, one_node, tutti::codec::fp16>;

const bool served = serve_switching_table<processes>() && serve_switching_table<lossy_processes>();
}  // namespace

TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(compressed_allreduce_conformance, lossy_processes);
