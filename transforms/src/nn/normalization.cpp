// flax.linen.LayerNorm as a function: normalise over one axis, then the optional scale and bias.
#include "../primitives/common.hpp"
#include "canopy/nn.hpp"

namespace canopy::nn {

Array layer_norm(const Array& x, const Array& scale, const Array& bias, double epsilon, int axis) {
  Array xf = detail::to_float(x);
  int a = detail::normalize_axis("layer_norm", axis, xf.ndim(), xf.aval());
  const std::int64_t features = xf.shape()[static_cast<std::size_t>(a)];
  // scale/bias hold one value per feature; reshaped so they line up with `axis` when it is not last.
  Shape param_shape;
  param_shape.resize(xf.ndim() - static_cast<std::size_t>(a), 1);
  param_shape[0] = features;
  auto param = [&](const Array& p, const char* what) {
    if (p.ndim() != 1 || p.shape()[0] != features)
      detail::raise<ShapeError>("layer_norm", what, to_string(p.aval()),
                                detail::concat("must have shape [", features, "] for x ", to_string(xf.aval()), " and axis ", axis));
    return reshape(p, param_shape);
  };
  // Two-pass statistics (mean, then mean of squared deviations): no cancellation for large means.
  Array centered = xf - mean(xf, Axes{{a}}, true);
  Array y = centered * rsqrt(mean(centered * centered, Axes{{a}}, true) + epsilon);
  if (scale.valid()) y = y * param(scale, "scale");
  if (bias.valid()) y = y + param(bias, "bias");
  return y;
}

}  // namespace canopy::nn
