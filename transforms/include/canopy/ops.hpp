// The primitive-level ops (jax.lax names), one line per primitive. Elementwise ops take
// jax.numpy semantics: operands are promoted (weak C++ scalars defer) and broadcast.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "canopy/array.hpp"
#include "canopy/precision.hpp"

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
Array asin(const Array& x);      ///< arcsine (NaN outside [-1, 1])
Array acos(const Array& x);      ///< arccosine (NaN outside [-1, 1])
Array atan(const Array& x);      ///< arctangent
Array asinh(const Array& x);     ///< inverse hyperbolic sine
Array acosh(const Array& x);     ///< inverse hyperbolic cosine (NaN below 1)
Array atanh(const Array& x);     ///< inverse hyperbolic tangent (+-inf at +-1, NaN beyond)
Array sinh(const Array& x);      ///< hyperbolic sine
Array cosh(const Array& x);      ///< hyperbolic cosine
Array cbrt(const Array& x);      ///< cube root (negative for negative x)
Array floor(const Array& x);     ///< round down (identity on integers)
Array ceil(const Array& x);      ///< round up (identity on integers)
/// How `round` breaks ties (lax.RoundingMethod).
enum class RoundingMethod { away_from_zero, to_nearest_even };
/// lax.round with its rounding method (lax's default is away_from_zero). `round(x)` and
/// `round(x, decimals)` are jnp.round (numpy_ufuncs.hpp): ties to even.
Array round(const Array& x, RoundingMethod method);
Array is_finite(const Array& x);  ///< bool: not inf and not NaN
Array erf(const Array& x);        ///< error function
Array bitwise_not(const Array& x);  ///< lax.bitwise_not: logical on bool, bitwise on integers; TypeError on floats

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
// lax.bitwise_*: logical on bool, bitwise on integers, TypeError on floats (jnp's logical_* are
// in numpy.hpp: any dtype, nonzero is true, the result is bool).
Array bitwise_and(const Array& x, const Array& y);
Array bitwise_or(const Array& x, const Array& y);
Array bitwise_xor(const Array& x, const Array& y);

/// lax.select_n: cases[which] elementwise; `which` is bool (2 cases) or i32 (an out-of-range value
/// clamps to the first or last case, as XLA's lowering does; JAX leaves it undefined); all shapes equal.
Array select_n(const Array& which, const std::vector<Array>& cases);
/// Converts to `dtype` (float -> int truncates toward zero and saturates).
Array convert_element_type(const Array& x, DType dtype);
/// Reinterprets the bits; to a narrower dtype a trailing axis of (old / new width) appears, to a
/// wider one the last axis (of size new / old width) is consumed, as lax.bitcast_convert_type.
Array bitcast_convert_type(const Array& x, DType dtype);

/// Broadcasts x into `shape`; operand dim i goes to output dim broadcast_dimensions[i].
Array broadcast_in_dim(const Array& x, const Shape& shape, const std::vector<int>& broadcast_dimensions);
/// Same elements in a new shape (one dimension may be -1); no copy.
Array reshape(const Array& x, const Shape& shape);
/// Permutes axes (default: reversed).
Array transpose(const Array& x, const std::vector<int>& permutation = {});
/// lax.rev: the elements in reverse order along each of `dimensions`.
Array rev(const Array& x, const std::vector<int>& dimensions);

/// lax.DotDimensionNumbers: ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)).
struct DotDimensionNumbers {
  std::vector<int> lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
};
/// The precisions of a product's two operands (lhs, rhs) as lax canonicalizes `precision`; none
/// when neither the call nor default_matmul_precision (matmul_precision.hpp) asked for one. A
/// kernel computes at the higher of the two (XLA's rule).
using OperandPrecision = std::optional<std::pair<Precision, Precision>>;
/// lax's `precision` argument: nothing (the current default_matmul_precision), one Precision for
/// both operands, a pair (lhs, rhs), or JAX's names: "default", "high", "highest", and
/// "bfloat16"/"fastest" (default), "tensorfloat32"/"bfloat16_3x" (high), "float32" (highest);
/// any other name is a ValueError.
struct PrecisionConfig {
  PrecisionConfig() = default;
  PrecisionConfig(Precision both) : operands(std::pair{both, both}) {}  // NOLINT: implicit, as JAX takes one
  PrecisionConfig(Precision lhs, Precision rhs) : operands(std::pair{lhs, rhs}) {}
  PrecisionConfig(const char* name);         // NOLINT: implicit, so "highest" reads as in JAX
  PrecisionConfig(const std::string& name);  // NOLINT
  OperandPrecision operands;  ///< none: the default at the call
};
/// The Precision a JAX precision name stands for (see PrecisionConfig); ValueError naming `api`
/// and the name otherwise.
Precision parse_precision(std::string_view name, std::string_view api = "Precision");

/// General contraction; result dims are (batch..., lhs free..., rhs free...). `precision` as
/// lax.dot_general's (the Precision enum says what each does on which device).
Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims,
                  const PrecisionConfig& precision = {});

/// Sum over `axes` (the dims disappear).
Array reduce_sum(const Array& x, const std::vector<int>& axes);
/// Maximum over `axes`.
Array reduce_max(const Array& x, const std::vector<int>& axes);
/// Minimum over `axes`.
Array reduce_min(const Array& x, const std::vector<int>& axes);

/// The identity, with a zero derivative: gradients do not flow through it (lax.stop_gradient).
Array stop_gradient(const Array& x);

// Collectives over the axis of an enclosing vmap(..., axis_name(name)) or pmap(...,
// axis_name(name)); AxisNameError elsewhere. Under pmap the devices combine their values in
// device order, so results are the same on every run.
/// Sum over the lanes (every lane gets the total).
Array psum(const Array& x, const std::string& axis_name);
/// Mean over the lanes.
Array pmean(const Array& x, const std::string& axis_name);
/// Maximum over the lanes.
Array pmax(const Array& x, const std::string& axis_name);
/// Minimum over the lanes.
Array pmin(const Array& x, const std::string& axis_name);
/// Every lane's x, stacked along a new leading axis (each lane gets the whole stack).
Array all_gather(const Array& x, const std::string& axis_name);
/// This lane's index along the axis (i32 scalar).
Array axis_index(const std::string& axis_name);
/// lax.ppermute: lane `destination` receives lane `source`'s x for each (source, destination)
/// pair; a lane no pair sends to receives zeros. Each index appears at most once per side.
Array ppermute(const Array& x, const std::string& axis_name, std::vector<std::pair<int, int>> perm);
/// lax.psum_scatter: the psum of x, of which lane i keeps block i along `scatter_dimension`
/// (whose size must be the axis size, and disappears; with `tiled`, a multiple of it, divided).
Array psum_scatter(const Array& x, const std::string& axis_name, int scatter_dimension = 0, bool tiled = false);

/// Index along `dimension` of an array of `shape`.
Array iota(DType dtype, const Shape& shape, int dimension = 0);

// Slicing, indexing, concatenation and padding (jax.lax). Start indices that leave the operand are
// clamped (dynamic_*), clamped or filled/dropped (gather/scatter, per GatherScatterMode); static
// bounds that do not fit are ShapeErrors.
/// lax.slice: elements start[d], start[d] + strides[d], ... below limit[d] (strides default to 1).
Array slice(const Array& x, const std::vector<std::int64_t>& start_indices, const std::vector<std::int64_t>& limit_indices,
            const std::vector<std::int64_t>& strides = {});
/// lax.dynamic_slice: a `slice_sizes` window at runtime starts (one integer scalar per dim). Negative
/// starts count from the end; then, as in JAX, each start is clamped to [0, dim - size] so the window fits.
Array dynamic_slice(const Array& x, const std::vector<Array>& start_indices, const std::vector<std::int64_t>& slice_sizes);
/// dynamic_slice with static starts (same negative-index and clamping rules).
Array dynamic_slice(const Array& x, const std::vector<std::int64_t>& start_indices,
                    const std::vector<std::int64_t>& slice_sizes);
/// lax.dynamic_update_slice: x with `update` written at the starts (normalised and clamped as dynamic_slice).
Array dynamic_update_slice(const Array& x, const Array& update, const std::vector<Array>& start_indices);
/// dynamic_update_slice with static starts.
Array dynamic_update_slice(const Array& x, const Array& update, const std::vector<std::int64_t>& start_indices);

/// lax.GatherScatterMode: what a window whose start index leaves the operand does.
enum class GatherScatterMode {
  clip,               ///< starts are clamped so the whole window is in bounds
  fill_or_drop,       ///< gather: the window reads the fill value; scatter: the update is dropped (JAX's default)
  promise_in_bounds,  ///< caller promises in-bounds; gathers then clamp and scatters drop, as on XLA
};
/// lax.GatherDimensionNumbers without batching dims; the last dim of start_indices is the index vector.
struct GatherDimensionNumbers {
  std::vector<int> offset_dims;           ///< output dims holding the window's non-collapsed dims, sorted
  std::vector<int> collapsed_slice_dims;  ///< operand dims of window size 1 left out of the output, sorted
  std::vector<int> start_index_map;       ///< the operand dim each index-vector entry starts
};
/// lax.gather. Output = batch dims of start_indices interleaved with the window dims at offset_dims.
/// fill_value defaults to JAX's: NaN (floats), the lowest (signed) or highest (unsigned) integer, true.
Array gather(const Array& operand, const Array& start_indices, const GatherDimensionNumbers& dimension_numbers,
             const Shape& slice_sizes, GatherScatterMode mode = GatherScatterMode::fill_or_drop,
             std::optional<double> fill_value = std::nullopt);
/// lax.ScatterDimensionNumbers without batching dims; the last dim of scatter_indices is the index vector.
struct ScatterDimensionNumbers {
  std::vector<int> update_window_dims;            ///< updates dims that form the window, sorted
  std::vector<int> inserted_window_dims;          ///< operand dims of window size 1 absent from updates, sorted
  std::vector<int> scatter_dims_to_operand_dims;  ///< the operand dim each index-vector entry starts
};
/// lax.scatter: operand with each update window written at its start (duplicates: the last one wins).
Array scatter(const Array& operand, const Array& scatter_indices, const Array& updates,
              const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode = GatherScatterMode::fill_or_drop);
/// lax.scatter_add: operand with each update window added at its start (duplicates accumulate).
Array scatter_add(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers,
                  GatherScatterMode mode = GatherScatterMode::fill_or_drop);

/// jnp.concatenate / lax.concatenate: joins along `axis` (negative counts from the end); dtypes promote.
Array concatenate(const std::vector<Array>& xs, int axis = 0);
/// One dim of lax.pad's padding_config; negative low/high remove elements.
struct PadConfig {
  std::int64_t low = 0, high = 0, interior = 0;
};
/// lax.pad: `low` and `high` elements of padding_value at each end, `interior` between neighbours.
Array pad(const Array& x, const Array& padding_value, const std::vector<PadConfig>& padding_config);

// Convolution and windowed reductions (jax.lax), for canopy::nn's conv and pooling layers.
/// lax padding: "SAME", "SAME_LOWER" or "VALID" (any case), or explicit (low, high) pairs, one per
/// spatial dimension (conv) or per operand dimension (reduce_window).
struct Padding {
  Padding(const char* mode) : mode(mode) {}   // NOLINT: implicit, so "SAME" reads as in JAX
  Padding(std::string mode) : mode(std::move(mode)) {}  // NOLINT
  Padding(std::vector<std::pair<std::int64_t, std::int64_t>> pairs) : pairs(std::move(pairs)) {}  // NOLINT
  /// Braced pairs: `{{1, 1}, {0, 2}}`.
  Padding(std::initializer_list<std::pair<std::int64_t, std::int64_t>> pairs) : pairs(pairs) {}
  std::string mode;  ///< empty when `pairs` holds the padding
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
};
/// lax.conv_general_dilated's dimension_numbers in JAX's string form: lhs "NHWC" (N batch, C
/// features), rhs "HWIO" (O output, I input features), out "NHWC"; any other letters are spatial
/// and must be the same in all three. Empty strings mean lax's default "NC..", "OI..", "NC..".
struct ConvDimensionNumbers {
  std::string lhs, rhs, out;
};
/// lax.conv_general_dilated: `feature_group_count` groups (lhs features = groups * rhs I, rhs O a
/// multiple of groups); dilations default to 1. Float dtypes (TypeError otherwise); f32 runs on
/// oneDNN, f64/bf16, lhs_dilation > 1 (transposed convolution) and negative padding on plain loops.
/// Unlike lax, a window larger than the padded input is a ShapeError rather than an empty output.
/// `precision` as dot_general's; the gradient convolutions inherit it.
Array conv_general_dilated(const Array& lhs, const Array& rhs, const std::vector<std::int64_t>& window_strides,
                           const Padding& padding, const std::vector<std::int64_t>& lhs_dilation = {},
                           const std::vector<std::int64_t>& rhs_dilation = {},
                           const ConvDimensionNumbers& dimension_numbers = {}, std::int64_t feature_group_count = 1,
                           const PrecisionConfig& precision = {});
/// lax.reduce_window with lax.max: windows of `window_dimensions` (one per operand dim) stepped by
/// `window_strides`; padding counts as -inf (the lowest integer). Dilations default to 1. A window
/// larger than the padded operand is a ShapeError. f32 channels-last/first pooling runs on oneDNN.
Array reduce_window_max(const Array& x, const std::vector<std::int64_t>& window_dimensions,
                        const std::vector<std::int64_t>& window_strides, const Padding& padding,
                        const std::vector<std::int64_t>& base_dilation = {},
                        const std::vector<std::int64_t>& window_dilation = {});
/// lax.reduce_window with lax.add (padding counts as 0); same geometry as reduce_window_max.
Array reduce_window_sum(const Array& x, const std::vector<std::int64_t>& window_dimensions,
                        const std::vector<std::int64_t>& window_strides, const Padding& padding,
                        const std::vector<std::int64_t>& base_dilation = {},
                        const std::vector<std::int64_t>& window_dilation = {});

// Special functions, shifts, products, arg-extrema and sorting (the ops the PRNG samplers need).
/// Inverse error function on (-1, 1); +-inf at +-1, NaN outside. Giles' polynomials evaluated as
/// XLA does: <= 4 ulp for |x| < 0.99, relative error up to ~6e-6 (f32) closer to +-1.
Array erf_inv(const Array& x);
/// The float next to x in the direction of y (bit-level, so denormals included).
Array nextafter(const Array& x, const Array& y);
/// x << y on integers; shift amounts outside [0, bits of the dtype) give 0. TypeError on floats and bool.
Array shift_left(const Array& x, const Array& y);
/// x >> y filling with zeros (on the bits, also for i32); amounts outside [0, bits) give 0.
Array shift_right_logical(const Array& x, const Array& y);
/// x >> y copying the top bit (also for u32, as XLA); amounts outside [0, bits) fill with it.
Array shift_right_arithmetic(const Array& x, const Array& y);
/// Product over `axes` (integers wrap).
Array reduce_prod(const Array& x, const std::vector<int>& axes);
/// lax.cumsum: running sums along `axis` (negative counts from the end), from its end when
/// `reverse`; each partial sum is rounded to the dtype (integers wrap). jnp's cumsum is in numpy.hpp.
Array cumsum(const Array& x, int axis, bool reverse);
/// lax.cumprod: running products along `axis`, as cumsum.
Array cumprod(const Array& x, int axis, bool reverse);
/// lax.cummax: running maxima along `axis` (NaN, once seen, stays), from its end when `reverse`.
Array cummax(const Array& x, int axis = 0, bool reverse = false);
/// lax.cummin: running minima along `axis`, as cummax.
Array cummin(const Array& x, int axis = 0, bool reverse = false);
/// lax.argmax: index of the largest element along `axis` (first on ties; the first NaN wins).
Array argmax(const Array& x, int axis, DType index_dtype);
/// lax.argmin: index of the smallest element along `axis` (first on ties; the first NaN wins).
Array argmin(const Array& x, int axis, DType index_dtype);
/// lax.sort: operands of one shape sorted along `dimension` by the first `num_keys` of them
/// (lexicographically); floats order -inf < ... < -0.0 == 0.0 < ... < inf < NaN. Always stable.
std::vector<Array> sort(const std::vector<Array>& operands, int dimension = -1, bool is_stable = true, int num_keys = 1);
/// lax.sort_key_val: (keys sorted, values in the keys' order).
std::pair<Array, Array> sort_key_val(const Array& keys, const Array& values, int dimension = -1, bool is_stable = true);
/// jax.extend.random.threefry_2x32 on u32 word arrays (broadcast together): the two output words.
std::pair<Array, Array> threefry2x32(const Array& k0, const Array& k1, const Array& x0, const Array& x1);

}  // namespace canopy
