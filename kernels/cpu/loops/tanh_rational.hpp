// TEMPORARY: moved to canopy/kernels/tanh_rational.hpp (namespace canopy::kernels::math); this
// forwards the old path until its users are renamed.
#pragma once

#include "canopy/kernels/tanh_rational.hpp"

namespace canopy::kernels::cpu::special {
using ::canopy::kernels::math::tanh_rational;
}  // namespace canopy::kernels::cpu::special
