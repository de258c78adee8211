//! @file negotiation.hpp  How every rank comes to fuse the same tensors in the same order (umbrella).
//!
//! Each cycle of the engine is one negotiation round: every rank sends rank 0 (the coordinator) a
//! report of the tensors it enqueued since its last report, and rank 0 answers every rank with the
//! same response: which tensors are ready on all ranks, in which batches and order, which failed,
//! whether a blocking collective may run, and the fusion parameters. A tensor name is reported the
//! first time by name with its dtype, count and op; once all ranks have agreed on it, it gets a
//! small id that every rank records in the same order (the response cache), and from then on a
//! report of it is one bit in a bit vector over the ids. A training step's few hundred gradients
//! cost a report of a few dozen bytes. docs/fusion.md walks through the protocol.
//!
//! The parts: negotiation/messages.hpp (the report and response and their bytes),
//! negotiation/cache.hpp (the name -> id table every rank keeps), negotiation/coordinator.hpp
//! (rank 0's decisions).
#pragma once
#include "tutti/fusion/negotiation/cache.hpp"
#include "tutti/fusion/negotiation/coordinator.hpp"
#include "tutti/fusion/negotiation/messages.hpp"
