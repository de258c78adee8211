//! @file tutti.hpp  The umbrella header: everything a framework author needs, host side.
//! The GPU path is included separately: tutti/cuda/*.cuh (kernels, nvcc), tutti/transport/nccl.hpp
//! and tutti/algorithm/native.hpp (docs/gpu.md).
#pragma once

#include "tutti/version.hpp"

#include "tutti/core/bfloat16.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/half.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/core/reduce.hpp"
#include "tutti/core/tensor_view.hpp"

#include "tutti/bootstrap/concepts.hpp"
#include "tutti/bootstrap/inproc_store.hpp"
#include "tutti/bootstrap/node.hpp"
#include "tutti/bootstrap/rank_info.hpp"
#if defined(TUTTI_HAVE_NET)  // tutti::net: OpenSSL's libcrypto and threads
#include "tutti/bootstrap/tcp_store.hpp"
#endif
#include "tutti/core/collective.hpp"

#include "tutti/transport/concepts.hpp"
#include "tutti/transport/exchange.hpp"
#include "tutti/transport/group.hpp"
#include "tutti/transport/inproc.hpp"
#include "tutti/transport/node_aware.hpp"
#include "tutti/transport/shm.hpp"
#if defined(TUTTI_HAVE_UCX) && defined(TUTTI_HAVE_NET)  // tutti::ucx and tutti::net
#include "tutti/transport/multi_node.hpp"
#include "tutti/transport/ucx.hpp"
#endif

#include "tutti/algorithm/concepts.hpp"
#include "tutti/algorithm/alltoall.hpp"
#include "tutti/algorithm/automatic.hpp"
#include "tutti/algorithm/direct.hpp"
#include "tutti/algorithm/halving_doubling.hpp"
#include "tutti/algorithm/hierarchical.hpp"
#include "tutti/algorithm/ring.hpp"
#include "tutti/algorithm/tree.hpp"

#include "tutti/codec/concepts.hpp"
#include "tutti/codec/error_feedback.hpp"
#include "tutti/codec/float16.hpp"
#include "tutti/codec/int8.hpp"
#include "tutti/codec/none.hpp"
#include "tutti/codec/onebit.hpp"
#include "tutti/codec/topk.hpp"

#include "tutti/fusion/concepts.hpp"
#include "tutti/fusion/none.hpp"
#include "tutti/fusion/threshold.hpp"

#include "tutti/communicator.hpp"
