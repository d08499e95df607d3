// Internal to transforms: how vmap and the batching rules put a batch axis where it is wanted.
#pragma once

#include "canopy/array.hpp"

namespace canopy::detail {

/// Moves axis `from` of x to position `to` (both non-negative); x itself when they are equal.
Array move_axis(const Array& x, int from, int to);

}  // namespace canopy::detail
