//! @file node_aware.hpp  transport::node_aware<Intra, Inter>: shared memory inside a node, the network across.
#pragma once
#include "tutti/transport/node_aware/transport.hpp"
