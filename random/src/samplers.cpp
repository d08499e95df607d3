// The continuous samplers and bits, composed from Array ops exactly as jax/_src/random.py
// composes them from lax ops, so every intermediate rounds as JAX's does.
#include <cmath>
#include <limits>
#include <optional>

#include <canopy/core/trace.hpp>
#include <canopy/transforms/jit.hpp>

#include "internal.hpp"

namespace canopy::random {
namespace {

using detail::constant;

double tiny(DType dtype) {
  return dtype == DType::f32 ? static_cast<double>(std::numeric_limits<float>::min()) : std::numeric_limits<double>::min();
}

// The shape `p` or the bounds broadcast to when no shape is given; else checks they fit `shape`
// (JAX: the broadcast of shape and the parameter shapes must equal shape).
Shape param_shape(const char* api, std::optional<Shape> shape, const Shape& params) {
  if (!shape) return params;
  detail::check_shape(api, *shape);
  std::optional<Shape> b;
  try {
    b = broadcast_shapes(*shape, params, api);
  } catch (const ShapeError&) {  // reported below with the parameter named
  }
  if (!b || !(*b == *shape))
    canopy::detail::raise<ShapeError>(api, "shape", to_string(*shape),
                                      canopy::detail::concat("does not cover the parameter shape ", to_string(params)),
                                      b ? canopy::detail::concat("they broadcast to ", to_string(*b)) : "the two do not broadcast");
  return *shape;
}

// minval/maxval as JAX's _uniform takes them: converted to dtype, broadcast to shape.
Array uniform_scaled(const Array& key, const Shape& shape, DType dtype, const Array& lo, const Array& hi) {
  const Array floats = canopy::detail::random_uniform01_p(key, shape, dtype, current_layout());
  const Array mn = broadcast_to(lo.astype(dtype), shape), mx = broadcast_to(hi.astype(dtype), shape);
  return max(mn, floats * (mx - mn) + mn);
}

/// Whether a sampler runs at the bottom of the trace stack on a concrete key. jax/_src/random.py
/// jit-compiles its samplers, so an eager call is one compiled program (for normal, one fused
/// pass that never stores its uniforms); canopy compiles eager calls the same way. Under a
/// transformation the ops are recorded as they are, so an enclosing jit fuses them with their
/// neighbours and vmap/grad see the plain ops.
bool eager_call(const Array& key) {
  return !key.is_tracer() && canopy::current_trace() == &EvalTrace::instance();
}

std::vector<std::int64_t> dims(const Shape& s) { return {s.begin(), s.end()}; }

Array normal_ops(const Array& key, const Shape& shape, DType dtype) {
  // lo = nextafter(-1, 0) in dtype, hi = 1: the open interval keeps erf_inv finite.
  const double lo = dtype == DType::f32 ? static_cast<double>(std::nextafter(-1.0f, 0.0f)) : std::nextafter(-1.0, 0.0);
  const Array u = uniform(key, shape, dtype, lo, 1.0);
  return constant(std::sqrt(2.0), dtype) * erf_inv(u);
}

}  // namespace

Array bits(const Array& key, const Shape& shape, DType dtype) {
  detail::check_key("bits", key, true);
  detail::check_shape("bits", shape);
  if (!is_unsigned(dtype))
    canopy::detail::raise<TypeError>("bits", "dtype", "", canopy::detail::concat(dtype, " is not an unsigned integer dtype"),
                                     "use u8, u16, u32 or u64");
  return canopy::detail::random_bits_p(key, shape, current_layout(), dtype);
}

Array uniform(const Array& key, const Shape& shape, DType dtype, double minval, double maxval) {
  detail::check_key("uniform", key, true);
  detail::check_float_dtype("uniform", dtype);
  detail::check_shape("uniform", shape);
  // The default range needs no arithmetic: floats * 1 + 0 and max(0, floats) are floats exactly.
  if (minval == 0.0 && !std::signbit(minval) && maxval == 1.0)
    return canopy::detail::random_uniform01_p(key, shape, dtype, current_layout());
  return uniform_scaled(key, shape, dtype, constant(minval, dtype), constant(maxval, dtype));
}

Array uniform(const Array& key, const Shape& shape, DType dtype, const Array& minval, const Array& maxval) {
  detail::check_key("uniform", key, true);
  detail::check_float_dtype("uniform", dtype);
  detail::check_shape("uniform", shape);
  param_shape("uniform", shape, broadcast_shapes(minval.shape(), maxval.shape(), "uniform"));
  return uniform_scaled(key, shape, dtype, minval, maxval);
}

Array normal(const Array& key, const Shape& shape, DType dtype) {
  detail::check_key("normal", key, true);
  detail::check_float_dtype("normal", dtype);
  detail::check_shape("normal", shape);
  if (!eager_call(key)) return normal_ops(key, shape, dtype);
  // The layout is read while tracing, so it is part of the cache key.
  static const auto compiled = jit(
      [](const Array& k, const std::vector<std::int64_t>& s, DType d, Layout layout) {
        LayoutScope scope(layout);
        return normal_ops(k, Shape(s), d);
      },
      jit_name("random.normal"), canopy::detail::InternalJit{});
  return compiled(key, dims(shape), dtype, current_layout());
}

Array truncated_normal(const Array& key, double lower, double upper, std::optional<Shape> shape, DType dtype) {
  detail::check_float_dtype("truncated_normal", dtype);
  return truncated_normal(key, constant(lower, dtype), constant(upper, dtype), std::move(shape), dtype);
}

Array truncated_normal(const Array& key, const Array& lower, const Array& upper, std::optional<Shape> shape,
                       DType dtype) {
  detail::check_key("truncated_normal", key, true);
  detail::check_float_dtype("truncated_normal", dtype);
  const Shape s = param_shape("truncated_normal", std::move(shape),
                              broadcast_shapes(lower.shape(), upper.shape(), "truncated_normal"));
  const Array sqrt2 = constant(std::sqrt(2.0), dtype);
  const Array lo = lower.astype(dtype), hi = upper.astype(dtype);
  const Array a = erf(lo / sqrt2), b = erf(hi / sqrt2);
  const Array u = uniform(key, s, dtype, a, b);
  const Array out = sqrt2 * erf_inv(u);
  // Clamp into the open interval (lower, upper): rounding, or u == a, may land on a bound.
  const Array inf = constant(std::numeric_limits<double>::infinity(), dtype);
  return minimum(nextafter(hi, -inf), maximum(nextafter(lo, inf), out));
}

Array bernoulli(const Array& key, double p, std::optional<Shape> shape) {
  // A C++ double is JAX's Python float: the default float (f64 in x64 mode).
  return bernoulli(key, detail::constant(p, default_float_dtype()), std::move(shape));
}

Array bernoulli(const Array& key, const Array& p, std::optional<Shape> shape) {
  detail::check_key("bernoulli", key, true);
  if (p.dtype() != DType::f32 && p.dtype() != DType::f64)
    canopy::detail::raise<TypeError>("bernoulli", "p", "argument 1",
                                     canopy::detail::concat(to_string(p.aval()), " must have dtype f32 or f64"));
  const Shape s = param_shape("bernoulli", std::move(shape), p.shape());
  return uniform(key, s, p.dtype()) < p;
}

Array gumbel(const Array& key, const Shape& shape, DType dtype) {
  detail::check_key("gumbel", key, true);
  detail::check_float_dtype("gumbel", dtype);
  return -log(-log(uniform(key, shape, dtype, tiny(dtype), 1.0)));
}

Array exponential(const Array& key, const Shape& shape, DType dtype) {
  detail::check_key("exponential", key, true);
  detail::check_float_dtype("exponential", dtype);
  // 1 - u moves log's argument to (0, 1].
  return -log1p(-uniform(key, shape, dtype));
}

Array categorical(const Array& key, const Array& logits, int axis, std::optional<Shape> shape) {
  detail::check_key("categorical", key, true);
  if (logits.dtype() != DType::f32 && logits.dtype() != DType::f64)
    canopy::detail::raise<TypeError>("categorical", "logits", "argument 1",
                                     canopy::detail::concat(to_string(logits.aval()), " must have dtype f32 or f64"));
  const int r = static_cast<int>(logits.ndim());
  const int ax = detail::axis_of("categorical", axis, logits);
  Shape batch;
  for (int d = 0; d < r; ++d) if (d != ax) batch.push_back(logits.shape()[static_cast<std::size_t>(d)]);
  Shape s = shape ? *shape : batch;
  detail::check_shape("categorical", s);
  const std::size_t nb = batch.size();
  if (s.size() < nb || !(broadcast_shapes(s, batch, "categorical") == s))
    canopy::detail::raise<ShapeError>("categorical", "shape", to_string(s),
                                      canopy::detail::concat("does not end with (a broadcast of) the logits' batch shape ",
                                                             to_string(batch)));
  // gumbel of (prefix..., trailing dims of shape with the class axis put back) + logits, then
  // argmax over the class axis, counted from the end.
  const std::size_t prefix = s.size() - nb;
  Shape g;
  for (std::size_t i = 0; i < prefix; ++i) g.push_back(s[i]);
  for (int d = 0, t = 0; d < r; ++d)
    g.push_back(d == ax ? logits.shape()[static_cast<std::size_t>(ax)] : s[prefix + static_cast<std::size_t>(t++)]);
  std::vector<int> lead;
  for (std::size_t i = 0; i < prefix; ++i) lead.push_back(static_cast<int>(i));
  const Array l = lead.empty() ? logits : expand_dims(logits, lead);
  return argmax(gumbel(key, g, logits.dtype()) + l, std::optional<int>(ax - r), false);
}

}  // namespace canopy::random
