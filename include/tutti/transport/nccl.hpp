//! @file nccl.hpp  transport::nccl — ranks on GPUs, over an NCCL communicator, with its options.
//! Needs CUDA and NCCL: link tutti::nccl, which defines TUTTI_HAVE_NCCL.
#pragma once
#include "tutti/transport/nccl/options.hpp"
#include "tutti/transport/nccl/transport.hpp"
