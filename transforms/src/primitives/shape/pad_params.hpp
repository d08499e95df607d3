// Internal to pad.cpp and the backends: the params of lax.pad, and the placing of the operand's
// surviving elements that every backend's kernel runs after its fill.
#pragma once

#include <vector>

#include "canopy/array.hpp"
#include "canopy/ops.hpp"

namespace canopy::detail {

/// lax.pad's padding per operand dim.
struct PadParams {
  std::vector<PadConfig> padding_config;
};

/// Copies the elements of `operand` that survive the padding into their places in `out` (on
/// out's device, in its memory; the padding around them is the caller's fill).
void place_padded_operand(const Array& operand, const Array& out, const PadParams& params);

}  // namespace canopy::detail
