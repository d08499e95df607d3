// TEMPORARY: the per-element math moved to canopy/kernels/element_math.hpp (namespace
// canopy::kernels::math); this forwards the old path until its users are renamed.
#pragma once

#include "canopy/kernels/element_math.hpp"

namespace canopy::kernels::cuda {
namespace math = ::canopy::kernels::math;
}  // namespace canopy::kernels::cuda
