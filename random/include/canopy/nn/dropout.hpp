// flax.linen.Dropout as a function of a key. It draws from canopy::random, so it lives with the
// samplers (random/) rather than with the rest of canopy::nn in <canopy/nn.hpp>.
#pragma once

#include "canopy/array.hpp"

namespace canopy::nn {

/// flax.linen.Dropout as a function: each element kept with probability 1 - rate and scaled by
/// 1 / (1 - rate) (inverted dropout, so evaluation needs no rescaling), else 0; the mask is
/// jax.random.bernoulli(key, 1 - rate, x.shape), as flax draws it. rate 0 returns x, rate 1 zeros.
/// ValueError for a rate outside [0, 1]. Do not call it at evaluation.
Array dropout(const Array& key, double rate, const Array& x);

}  // namespace canopy::nn
