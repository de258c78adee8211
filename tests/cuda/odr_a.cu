//! @file odr_a.cu  First of two translation units that instantiate the same kernels (the ODR test; odr_b.cu has main).
#include "odr_run.cuh"

std::vector<std::uint16_t> odr_a_run(std::vector<std::int8_t>& int8_values) { return odr_run<0>(int8_values); }
