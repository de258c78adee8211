//! @file shm.hpp  transport::shm — ranks as processes on one host (see shm/transport.hpp).
#pragma once
#include "tutti/transport/shm/allocator.hpp"
#include "tutti/transport/shm/layout.hpp"
#include "tutti/transport/shm/options.hpp"
#include "tutti/transport/shm/pool.hpp"
#include "tutti/transport/shm/registered_buffer.hpp"
#include "tutti/transport/shm/segment.hpp"
#include "tutti/transport/shm/transport.hpp"
