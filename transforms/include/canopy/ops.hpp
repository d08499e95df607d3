// The primitive-level ops (jax.lax names), one line per primitive. Elementwise ops take
// jax.numpy semantics: operands are promoted (weak C++ scalars defer) and broadcast.
#pragma once

#include <vector>

#include "canopy/array.hpp"

namespace canopy {

// Elementwise unary. Float-only ops promote integer/bool inputs to f32, as jax.numpy does.
Array neg(const Array& x);       ///< -x
Array abs(const Array& x);       ///< |x|
Array sign(const Array& x);      ///< -1, 0 or 1 (keeps -0.0 and NaN)
Array exp(const Array& x);       ///< e^x
Array log(const Array& x);       ///< natural logarithm
Array log1p(const Array& x);     ///< log(1 + x), accurate near 0
Array expm1(const Array& x);     ///< e^x - 1, accurate near 0
Array sqrt(const Array& x);      ///< square root
Array rsqrt(const Array& x);     ///< 1 / sqrt(x)
Array tanh(const Array& x);      ///< hyperbolic tangent
Array logistic(const Array& x);  ///< 1 / (1 + e^-x)
Array sin(const Array& x);       ///< sine
Array cos(const Array& x);       ///< cosine
Array tan(const Array& x);       ///< tangent
Array exp2(const Array& x);      ///< 2^x
Array floor(const Array& x);     ///< round down (identity on integers)
Array ceil(const Array& x);      ///< round up (identity on integers)
/// How `round` breaks ties (lax.RoundingMethod).
enum class RoundingMethod { away_from_zero, to_nearest_even };
Array round(const Array& x, RoundingMethod method = RoundingMethod::away_from_zero);  ///< lax.round
Array is_finite(const Array& x);  ///< bool: not inf and not NaN
Array erf(const Array& x);        ///< error function
Array logical_not(const Array& x);  ///< `not`: logical on bool, bitwise on integers; TypeError on floats

// Elementwise binary, broadcasting.
Array add(const Array& x, const Array& y);    ///< x + y
Array sub(const Array& x, const Array& y);    ///< x - y
Array mul(const Array& x, const Array& y);    ///< x * y
Array div(const Array& x, const Array& y);    ///< lax.div: float division, integer division toward zero
Array pow(const Array& x, const Array& y);    ///< x ** y
Array max(const Array& x, const Array& y);    ///< elementwise maximum (NaN propagates)
Array min(const Array& x, const Array& y);    ///< elementwise minimum (NaN propagates)
Array atan2(const Array& x, const Array& y);  ///< atan(x / y) with quadrant
Array rem(const Array& x, const Array& y);    ///< lax.rem: remainder with the sign of x (C fmod / %)
Array eq(const Array& x, const Array& y);     ///< x == y (bool)
Array ne(const Array& x, const Array& y);     ///< x != y (bool)
Array lt(const Array& x, const Array& y);     ///< x < y (bool)
Array le(const Array& x, const Array& y);     ///< x <= y (bool)
Array gt(const Array& x, const Array& y);     ///< x > y (bool)
Array ge(const Array& x, const Array& y);     ///< x >= y (bool)
Array logical_and(const Array& x, const Array& y);  ///< `and`: logical on bool, bitwise on integers
Array logical_or(const Array& x, const Array& y);   ///< `or`: logical on bool, bitwise on integers
Array logical_xor(const Array& x, const Array& y);  ///< `xor`: logical on bool, bitwise on integers

/// lax.select_n: cases[which] elementwise; `which` is bool (2 cases) or i32; all shapes equal.
Array select_n(const Array& which, const std::vector<Array>& cases);
/// Converts to `dtype` (float -> int truncates toward zero and saturates).
Array convert_element_type(const Array& x, DType dtype);
/// Reinterprets the bits (same item size: u32 <-> f32 <-> i32).
Array bitcast_convert_type(const Array& x, DType dtype);

/// Broadcasts x into `shape`; operand dim i goes to output dim broadcast_dimensions[i].
Array broadcast_in_dim(const Array& x, const Shape& shape, const std::vector<int>& broadcast_dimensions);
/// Same elements in a new shape (one dimension may be -1); no copy.
Array reshape(const Array& x, const Shape& shape);
/// Permutes axes (default: reversed).
Array transpose(const Array& x, const std::vector<int>& permutation = {});

/// lax.DotDimensionNumbers: ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)).
struct DotDimensionNumbers {
  std::vector<int> lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
};
/// General contraction; result dims are (batch..., lhs free..., rhs free...).
Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims);

/// Sum over `axes` (the dims disappear).
Array reduce_sum(const Array& x, const std::vector<int>& axes);
/// Maximum over `axes`.
Array reduce_max(const Array& x, const std::vector<int>& axes);
/// Minimum over `axes`.
Array reduce_min(const Array& x, const std::vector<int>& axes);

/// Index along `dimension` of an array of `shape`.
Array iota(DType dtype, const Shape& shape, int dimension = 0);

}  // namespace canopy
