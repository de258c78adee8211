//! @file ucx.hpp  transport::ucx — the network transport (UCX tag matching), with its options.
//! Needs UCX: link tutti::ucx, which defines TUTTI_HAVE_UCX.
#pragma once
#include "tutti/transport/ucx/options.hpp"
#include "tutti/transport/ucx/transport.hpp"
