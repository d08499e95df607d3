// Internal to round.cpp and the backends: the params of lax.round.
#pragma once

#include "canopy/ops.hpp"

namespace canopy::detail {

/// Which way halves go: away from zero, or to the nearest even.
struct RoundParams {
  RoundingMethod rounding_method = RoundingMethod::away_from_zero;
};

}  // namespace canopy::detail
