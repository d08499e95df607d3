// jax.numpy's elementwise functions beyond the lax names (numpy_ufuncs.hpp), each written as JAX
// writes it (jax/_src/numpy/ufuncs.py, lax_numpy.py) so that values, edge cases and derivatives
// follow JAX's.
#include <cfloat>
#include <cmath>

#include "../primitives/common.hpp"
#include "canopy/transforms/custom.hpp"

namespace canopy {
namespace {

/// jnp's promote_args_numeric: the common dtype, bool made i32.
std::vector<Array> promote_numeric(const Array& x, const Array& y, std::string_view api) {
  std::vector<Array> p = detail::promote({x, y}, api);
  for (Array& a : p)
    if (a.dtype() == DType::bool_) a = detail::convert_weak(a, DType::i32, a.weak_type());
  return p;
}

/// jnp's promote_args_inexact: the common dtype, integers and bool made the default float.
std::vector<Array> promote_inexact(const Array& x, const Array& y, std::string_view api) {
  std::vector<Array> p = detail::promote({x, y}, api);
  return {detail::to_float(p[0]), detail::to_float(p[1])};
}

/// A bool array of x's shape, all false (what jnp's classifiers give for integers and bool).
Array all_false(const Array& x) { return zeros(x.shape(), DType::bool_); }

/// CPython's float_divmod, as jnp's _float_divmod: (floor(x / y), x mod y with y's sign).
std::pair<Array, Array> float_divmod(const Array& x, const Array& y) {
  Array mod = rem(x, y);
  const Array numerator = where(y == 0, x, x - mod);
  Array quotient = div(numerator, y);
  const Array fix = logical_and(mod != 0, sign(y) != sign(mod));
  mod = where(fix, mod + y, mod);
  quotient = where(fix, quotient - 1.0, quotient);
  return {round(quotient, RoundingMethod::away_from_zero), mod};
}

/// The largest finite value of a float dtype (numpy's finfo(dtype).max).
double finite_max(DType d) {
  switch (d) {
    case DType::f16: return 65504.0;
    case DType::bf16: return 3.3895313892515355e38;
    case DType::f32: return FLT_MAX;
    default: return DBL_MAX;
  }
}

}  // namespace

Array floor_divide(const Array& x, const Array& y) {
  const auto p = promote_numeric(x, y, "floor_divide");
  const DType d = p[0].dtype();
  if (is_unsigned(d)) return div(p[0], p[1]);
  if (is_integer(d)) {
    const Array q = div(p[0], p[1]);
    const Array fix = logical_and(sign(p[0]) != sign(p[1]), rem(p[0], p[1]) != 0);
    return where(fix, q - 1, q);
  }
  return float_divmod(p[0], p[1]).first;
}

std::pair<Array, Array> divmod(const Array& x, const Array& y) {
  const auto p = promote_numeric(x, y, "divmod");
  if (is_integer(p[0].dtype())) return {floor_divide(p[0], p[1]), remainder(p[0], p[1])};
  return float_divmod(p[0], p[1]);
}

Array fmod(const Array& x, const Array& y) {
  // Integer operands (bool alone is not one, as in JAX) divide by 1 where y is 0.
  const bool integer = is_integer(detail::promote({x, y}, "fmod")[0].dtype());
  const Array divisor = integer ? where(y == 0, 1, y) : y;
  const auto p = promote_numeric(x, divisor, "fmod");
  return rem(p[0], p[1]);
}

Array mod(const Array& x, const Array& y) { return remainder(x, y); }
Array true_divide(const Array& x, const Array& y) { return divide(x, y); }

Array round(const Array& x, int decimals) {
  const DType d = x.dtype();
  if (!is_floating(d)) return x;  // jnp: a no-op on integers (and bool)
  if (decimals == 0) return round(x, RoundingMethod::to_nearest_even);
  if (decimals > std::log10(finite_max(d))) return x;  // finer than the dtype holds
  // f16 scales in f32, where 10^decimals and the product keep their digits.
  const Array xs = d == DType::f16 ? x.astype(DType::f32) : x;
  const Array factor = full({}, std::pow(10.0, decimals), xs.dtype());
  const Array r = div(round(mul(xs, factor), RoundingMethod::to_nearest_even), factor);
  return d == DType::f16 ? r.astype(d) : r;
}

Array around(const Array& x, int decimals) { return round(x, decimals); }

Array rint(const Array& x) {
  if (!is_floating(x.dtype())) return x.astype(default_float_dtype());
  return round(x, RoundingMethod::to_nearest_even);
}

Array trunc(const Array& x) {
  if (!is_floating(x.dtype())) return x;
  return where(x < 0, ceil(x), floor(x));
}

Array log2(const Array& x) {
  const Array xf = detail::to_float(x);
  return div(log(xf), log(full({}, 2.0, xf.dtype())));
}

Array log10(const Array& x) {
  const Array xf = detail::to_float(x);
  return mul(log(xf), full({}, 0.4342944819032518, xf.dtype()));  // 1 / log(10)
}

Array logaddexp(const Array& x, const Array& y) {
  // JAX's formula, with JAX's custom derivative: t_x exp(x - out) + t_y exp(y - out), where an
  // infinite x, y or out counts as 0 (so -inf operands get a zero, not a NaN, derivative).
  static auto f = custom_jvp(
      [](const Array& a, const Array& b) {
        const Array delta = a - b;
        return where(delta != delta, a + b, max(a, b) + log1p(exp(-abs(delta))));
      },
      [](const auto& primals, const auto& tangents) {
        const auto& [a, b] = primals;
        const auto& [ta, tb] = tangents;
        const Array out = logaddexp(a, b);
        auto finite = [](const Array& v) { return where(v == INFINITY, zeros_like(v), v); };
        // jax's _replace_inf: +inf (only) becomes 0.
        return std::make_pair(out, ta * exp(finite(a) - finite(out)) + tb * exp(finite(b) - finite(out)));
      });
  const auto p = promote_inexact(x, y, "logaddexp");
  return f(p[0], p[1]);
}

Array hypot(const Array& x, const Array& y) {
  const auto p = promote_inexact(x, y, "hypot");
  const Array a = abs(p[0]), b = abs(p[1]);
  const Array inf = logical_or(isposinf(a), isposinf(b));
  const Array hi = maximum(a, b), lo = minimum(a, b);
  const Array r = where(hi == 0, hi, hi * sqrt(1.0 + square(div(lo, where(hi == 0, ones_like(hi), hi)))));
  return where(inf, full({}, INFINITY, r.dtype()), r);
}

Array deg2rad(const Array& x) {
  const Array xf = detail::to_float(x);
  return mul(xf, full({}, M_PI / 180.0, xf.dtype()));
}

Array rad2deg(const Array& x) {
  const Array xf = detail::to_float(x);
  return mul(xf, full({}, 180.0 / M_PI, xf.dtype()));
}

Array absolute(const Array& x) {
  if (x.dtype() == DType::bool_ || is_unsigned(x.dtype())) return x;
  return abs(x);
}

Array fabs(const Array& x) { return abs(detail::to_float(x)); }

Array copysign(const Array& x, const Array& y) {
  const auto p = promote_inexact(x, y, "copysign");
  const Array m = abs(p[0]);
  return where(signbit(p[1]), -m, m);
}

Array signbit(const Array& x) {
  const DType d = x.dtype();
  if (d == DType::bool_) return all_false(x);
  if (is_integer(d)) return x < 0;
  // The top bit of the float's bits, as jnp does it (so -0.0 and negative NaNs count).
  const DType bits = d == DType::f64 ? DType::i64 : (d == DType::f32 ? DType::i32 : DType::i16);
  return bitcast_convert_type(x, bits) < 0;
}

Array isnan(const Array& x) { return ne(x, x); }

Array isinf(const Array& x) {
  if (!is_floating(x.dtype())) return all_false(x);
  return eq(abs(x), full({}, INFINITY, x.dtype()));
}

Array isposinf(const Array& x) {
  if (!is_floating(x.dtype())) return all_false(x);
  return eq(x, full({}, INFINITY, x.dtype()));
}

Array isneginf(const Array& x) {
  if (!is_floating(x.dtype())) return all_false(x);
  return eq(x, full({}, -INFINITY, x.dtype()));
}

Array nan_to_num(const Array& x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  const DType d = x.dtype();
  if (!is_floating(d)) return x;
  Array out = where(isnan(x), full({}, nan, d), x);
  out = where(isposinf(out), full({}, posinf.value_or(finite_max(d)), d), out);
  return where(isneginf(out), full({}, neginf.value_or(-finite_max(d)), d), out);
}

Array clip(const Array& x, const std::optional<Array>& min, const std::optional<Array>& max) {
  Array r = x;
  if (min) r = maximum(*min, r);
  if (max) r = minimum(*max, r);
  return r;
}

}  // namespace canopy
