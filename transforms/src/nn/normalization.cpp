// flax.linen.LayerNorm and BatchNorm as functions: normalise over the reduced axes, then the
// optional per-feature scale and bias; batch norm's running statistics are a pytree passed in
// and returned, as flax's `batch_stats` collection.
#include "../primitives/common.hpp"
#include "canopy/nn.hpp"
#include "canopy/numpy.hpp"

namespace canopy::nn {
namespace {

/// `p` (shape [features]) reshaped to broadcast along axis `a` of a rank-`rank` array.
Array per_feature(std::string_view api, const Array& p, const char* what, std::int64_t features, int a, std::size_t rank,
                  const Array& x, int axis) {
  if (p.ndim() != 1 || p.shape()[0] != features)
    detail::raise<ShapeError>(api, what, to_string(p.aval()),
                              detail::concat("must have shape [", features, "] for x ", to_string(x.aval()), " and axis ", axis));
  Shape s;
  s.resize(rank - static_cast<std::size_t>(a), 1);
  s[0] = features;
  return reshape(p, s);
}

}  // namespace

Array layer_norm(const Array& x, const Array& scale, const Array& bias, double epsilon, int axis) {
  Array xf = detail::to_float(x);
  int a = detail::normalize_axis("layer_norm", axis, xf.ndim(), xf.aval());
  const std::int64_t features = xf.shape()[static_cast<std::size_t>(a)];
  // Two-pass statistics (mean, then mean of squared deviations): no cancellation for large means.
  Array centered = xf - mean(xf, Axes{{a}}, true);
  Array y = centered * rsqrt(mean(centered * centered, Axes{{a}}, true) + epsilon);
  if (scale.valid()) y = y * per_feature("layer_norm", scale, "scale", features, a, xf.ndim(), xf, axis);
  if (bias.valid()) y = y + per_feature("layer_norm", bias, "bias", features, a, xf.ndim(), xf, axis);
  return y;
}

LayerNormParams layer_norm_init(std::int64_t features, DType dtype) {
  return {ones({features}, dtype), zeros({features}, dtype)};
}

Array layer_norm(const Array& x, const LayerNormParams& params, double epsilon, int axis) {
  return layer_norm(x, params.scale, params.bias, epsilon, axis);
}

BatchNormStats batch_norm_init(std::int64_t features) {
  return {zeros({features}, DType::f32), ones({features}, DType::f32)};
}

std::pair<Array, BatchNormStats> batch_norm(const Array& x, const BatchNormStats& stats, const Array& scale,
                                            const Array& bias, const BatchNormOptions& o) {
  constexpr std::string_view api = "batch_norm";
  // Statistics in at least f32 (flax's force_float32_reductions): f16/bf16 inputs are promoted.
  const DType stat_dtype = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Array xs = x.astype(stat_dtype);
  const int a = detail::normalize_axis(api, o.axis, xs.ndim(), xs.aval());
  const std::int64_t features = xs.shape()[static_cast<std::size_t>(a)];
  std::vector<int> reduced;
  for (int i = 0; i < static_cast<int>(xs.ndim()); ++i)
    if (i != a) reduced.push_back(i);
  auto stat = [&](const Array& s, const char* what) {
    return per_feature(api, s, what, features, a, xs.ndim(), x, o.axis).astype(stat_dtype);
  };
  Array mu = stat(stats.mean, "stats.mean"), var = stat(stats.var, "stats.var");
  BatchNormStats next = stats;
  if (!o.use_running_average) {
    // flax's fast variance: E[x^2] - E[x]^2 from one pass, both averaged across replicas at once.
    Array moments = stack({mean(xs, Axes{reduced}, true), mean(square(xs), Axes{reduced}, true)});
    if (o.axis_name) moments = pmean(moments, *o.axis_name);
    mu = moments[0];
    var = maximum(moments[1] - square(mu), 0.0);
    const Shape feature_shape{features};
    next.mean = (o.momentum * stats.mean + (1 - o.momentum) * reshape(mu, feature_shape)).astype(stats.mean.dtype());
    next.var = (o.momentum * stats.var + (1 - o.momentum) * reshape(var, feature_shape)).astype(stats.var.dtype());
  }
  Array mul = rsqrt(var + o.epsilon);
  if (scale.valid()) mul = mul * per_feature(api, scale, "scale", features, a, xs.ndim(), x, o.axis);
  Array y = (xs - mu) * mul;
  if (bias.valid()) y = y + per_feature(api, bias, "bias", features, a, xs.ndim(), x, o.axis);
  // The result's dtype is that of x and the parameters together (flax's canonicalize_dtype).
  DType out = x.dtype();
  if (scale.valid()) out = promote_types(out, scale.dtype());
  if (bias.valid()) out = promote_types(out, bias.dtype());
  return {y.astype(is_floating(out) ? out : stat_dtype), std::move(next)};
}

}  // namespace canopy::nn
