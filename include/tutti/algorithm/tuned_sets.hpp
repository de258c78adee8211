//! @file tuned_sets.hpp  The candidate sets tutti-tune measures, as algorithm::tuned<...> types.
//!
//! A table names candidates by name; a program reads it with a tuned<...> that has them. Naming
//! one of these sets in a program, tutti-tune, tutti-bench and tutti-fusion-bench alike, keeps the
//! table tutti-tune wrote and the tuned<...> that reads it in step (a row naming an algorithm the
//! reader lacks is refused with its row and line).
#pragma once
#include "tutti/algorithm/direct.hpp"
#include "tutti/algorithm/eager.hpp"
#include "tutti/algorithm/halving_doubling.hpp"
#include "tutti/algorithm/hierarchical.hpp"
#include "tutti/algorithm/ring.hpp"
#include "tutti/algorithm/tree.hpp"
#include "tutti/algorithm/tuned.hpp"

namespace tutti::algorithm {

//! On one host over a one-sided transport (transport::shm): direct reads peers' memory there, and
//! hierarchical<direct, ring> serves simulated nodes (tutti-run --ranks-per-node).
using tuned_on_one_host = tuned<ring, direct, halving_doubling, tree, hierarchical<direct, ring>>;

//! Across hosts (transport::multi_node: shm inside each host, UCX between): eager first, so that
//! its frames carry every call's argument check (tuned's checker: the first candidate that checks)
//! and small calls can finish in them; flat schedules over the network, and hierarchical with ring
//! or direct inside each host.
using tuned_across_hosts =
    tuned<eager, ring, halving_doubling, tree, hierarchical<ring, ring>, hierarchical<direct, ring>>;

}  // namespace tutti::algorithm
