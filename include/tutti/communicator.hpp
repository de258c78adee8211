//! @file communicator.hpp  tutti::communicator<Policies...>: the composition point (the public header).
//!
//! The pieces live in tutti/communicator/, one concern each:
//!   policies.hpp            sorting the policy pack into roles, and the compile-time refusals
//!   collective_refusal.hpp  whether the Algorithm has a collective; the refusal listing who does
//!   arguments.hpp           this rank's verdict on a call's arguments, from core/collective_traits.hpp
//!   agreement.hpp           the cross-rank argument check (descriptors exchanged before data moves)
//!   logging.hpp             the info line of a communicator; debug and trace lines per collective
//!   options.hpp             communicator_options (TUTTI_TIMEOUT, TUTTI_CHECK, ...)
//!   communicator.hpp        the class: construction, the public collectives, the one checked call
//! The fusion engine it starts for allreduce_async lives in tutti/fusion/ (start.hpp, engine.hpp).
#pragma once
#include "tutti/communicator/communicator.hpp"
