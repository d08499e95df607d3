// jax.numpy's elementwise functions beyond the lax names of ops.hpp: integer-aware division and
// remainders, rounding, logarithms, inverse trigonometry under numpy's names, classification,
// clipping. Included by numpy.hpp. Each is JAX's composition of lax ops (so it is differentiable
// and batchable through them), with jnp's promotion: C++ scalars are weakly typed.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>

#include "canopy/array.hpp"
#include "canopy/ops.hpp"

namespace canopy {

// Division and remainders. Operands promote together; bool becomes i32.
/// jnp.floor_divide (Python's //): the quotient rounded toward -inf. Integers: lax.div corrected
/// where the signs differ and the remainder is nonzero (so x // 0 is -1 for x == 0 and -2
/// otherwise, as JAX's composition gives on XLA); floats: CPython's float_divmod.
Array floor_divide(const Array& x, const Array& y);
/// jnp.divmod: (floor_divide(x, y), remainder(x, y)).
std::pair<Array, Array> divmod(const Array& x, const Array& y);
/// jnp.fmod: the remainder with the sign of x (C's fmod, lax.rem); an integer x % 0 is 0.
Array fmod(const Array& x, const Array& y);
/// jnp.mod: remainder's other name (Python's %, with the sign of y).
Array mod(const Array& x, const Array& y);
/// jnp.true_divide: divide's other name.
Array true_divide(const Array& x, const Array& y);

// Rounding. Integers and bool are returned unchanged (rint: converted to the default float).
/// jnp.round: to `decimals` places, ties to even: round(x * 10^decimals) / 10^decimals (f16 in
/// f32). The lax form, round(x, RoundingMethod), rounds ties away from zero by default.
Array round(const Array& x, int decimals = 0);
/// jnp.around: round.
Array around(const Array& x, int decimals = 0);
/// jnp.rint: to the nearest integer value, ties to even; integers become the default float.
Array rint(const Array& x);
/// jnp.trunc: toward zero (ceil below 0, floor above).
Array trunc(const Array& x);

// Logarithms, exponentials and angles (integers promote to the default float).
/// jnp.log2: log(x) / log(2).
Array log2(const Array& x);
/// jnp.log10: log(x) * (1 / log(10)).
Array log10(const Array& x);
/// jnp.logaddexp: log(exp(x) + exp(y)) without overflow; its derivative is JAX's custom rule
/// (exact where x == y and at -inf).
Array logaddexp(const Array& x, const Array& y);
/// jnp.hypot: sqrt(x^2 + y^2) without overflow (scaled by the larger magnitude); inf if either is.
Array hypot(const Array& x, const Array& y);
/// jnp.deg2rad (radians): x * pi / 180.
Array deg2rad(const Array& x);
inline Array radians(const Array& x) { return deg2rad(x); }
/// jnp.rad2deg (degrees): x * 180 / pi.
Array rad2deg(const Array& x);
inline Array degrees(const Array& x) { return rad2deg(x); }
// numpy's names of the inverse trigonometric and hyperbolic functions (the lax names asin, ...,
// atanh are jnp's too; sinh, cosh and cbrt have one name).
inline Array arcsin(const Array& x) { return asin(x); }
inline Array arccos(const Array& x) { return acos(x); }
inline Array arctan(const Array& x) { return atan(x); }
inline Array arcsinh(const Array& x) { return asinh(x); }
inline Array arccosh(const Array& x) { return acosh(x); }
inline Array arctanh(const Array& x) { return atanh(x); }

// Signs and magnitudes.
/// jnp.absolute: abs, except that bool and unsigned integers are returned as they are.
Array absolute(const Array& x);
/// jnp.fabs: abs in floating point (integers promote to the default float).
Array fabs(const Array& x);
/// jnp.positive: x.
inline Array positive(const Array& x) { return x; }
/// jnp.copysign: |x| with the sign bit of y (both promoted to a float).
Array copysign(const Array& x, const Array& y);
/// jnp.signbit: whether the sign bit is set (so true for -0.0 and negative NaNs); for integers
/// x < 0; false for bool.
Array signbit(const Array& x);

// Classification (bool results; integers and bool are never NaN or infinite).
/// jnp.isnan.
Array isnan(const Array& x);
/// jnp.isinf: +inf or -inf.
Array isinf(const Array& x);
/// jnp.isposinf: +inf.
Array isposinf(const Array& x);
/// jnp.isneginf: -inf.
Array isneginf(const Array& x);
/// jnp.nan_to_num: NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf` (by default the
/// dtype's largest and lowest finite values); integers and bool unchanged.
Array nan_to_num(const Array& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                 std::optional<double> neginf = std::nullopt);

/// jnp.clip: maximum(min, x), then minimum(max, x) (a bound left out is not applied), broadcast and
/// promoted as those are.
Array clip(const Array& x, const std::optional<Array>& min = std::nullopt, const std::optional<Array>& max = std::nullopt);
/// clip with C++ scalar bounds (weakly typed, so an integer array stays integer).
template <class Lo, class Hi>
  requires std::is_arithmetic_v<Lo> && std::is_arithmetic_v<Hi>
Array clip(const Array& x, Lo min, Hi max) {
  return clip(x, detail::weak_scalar_of(min), detail::weak_scalar_of(max));
}
template <class Lo>
  requires std::is_arithmetic_v<Lo>
Array clip(const Array& x, Lo min, std::nullopt_t) {
  return clip(x, detail::weak_scalar_of(min), std::nullopt);
}
template <class Hi>
  requires std::is_arithmetic_v<Hi>
Array clip(const Array& x, std::nullopt_t, Hi max) {
  return clip(x, std::nullopt, detail::weak_scalar_of(max));
}

// The binary functions above with one C++ scalar operand (weakly typed): floor_divide(n, 2) is
// Python's n // 2.
#define CANOPY_NUMPY_SCALAR_BINARY(f)                   \
  template <class S>                                   \
    requires std::is_arithmetic_v<S>                   \
  Array f(const Array& x, S y) {                       \
    return f(x, detail::weak_scalar_of(y));            \
  }                                                    \
  template <class S>                                   \
    requires std::is_arithmetic_v<S>                   \
  Array f(S x, const Array& y) {                       \
    return f(detail::weak_scalar_of(x), y);            \
  }
CANOPY_NUMPY_SCALAR_BINARY(floor_divide)
CANOPY_NUMPY_SCALAR_BINARY(fmod)
CANOPY_NUMPY_SCALAR_BINARY(mod)
CANOPY_NUMPY_SCALAR_BINARY(logaddexp)
CANOPY_NUMPY_SCALAR_BINARY(hypot)
CANOPY_NUMPY_SCALAR_BINARY(copysign)
#undef CANOPY_NUMPY_SCALAR_BINARY

}  // namespace canopy
