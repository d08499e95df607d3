// flax.linen.Dropout as a function of a key: a Bernoulli keep-mask and the inverted scaling.
#include <cmath>

#include "canopy/nn/dropout.hpp"

#include "canopy/numpy.hpp"
#include "canopy/random.hpp"

namespace canopy::nn {

Array dropout(const Array& key, double rate, const Array& x) {
  if (!(rate >= 0 && rate <= 1))
    detail::raise<ValueError>("dropout", "rate", std::to_string(rate), "must be in [0, 1]");
  if (rate == 0) return x;
  if (rate == 1) return zeros_like(x);
  const double keep = 1 - rate;
  Array mask = random::bernoulli(key, keep, x.shape());
  return where(mask, x / keep, zeros_like(x));
}

}  // namespace canopy::nn
