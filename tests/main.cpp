//! @file
//! The one doctest main, compiled once and linked into every tutti_<folder>_tests executable.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
