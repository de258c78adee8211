//! The same conformance suite tutti runs on its own algorithms, run on a user's algorithm from the
//! user's project against an installed tutti: every collective star has, over threads (inproc)
//! and over forked processes (shm), world sizes 1-9, every dtype and op, counts 0 to 1,000,003, in
//! place and out of place, bit for bit, with guard bytes around every output.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/testing/inproc_world.hpp>

#include "star.hpp"

using threads = tutti::testing::inproc_world<my_project::star>;
using processes = tutti::testing::fork_world<my_project::star>;

TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, threads);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, threads);
