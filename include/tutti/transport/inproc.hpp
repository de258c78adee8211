//! @file inproc.hpp  transport::inproc — ranks as threads of one process (see inproc/transport.hpp).
#pragma once
#include "tutti/transport/inproc/fabric.hpp"
#include "tutti/transport/inproc/transport.hpp"
