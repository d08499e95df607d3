// jax.numpy-style functions composed from the primitive ops: creation, promotion,
// broadcasting helpers, reductions with keepdims, matmul/dot, where, and jnp's names.
#pragma once

#include <concepts>
#include <optional>
#include <span>
#include <type_traits>
#include <string_view>
#include <utility>
#include <vector>

#include "canopy/array.hpp"
#include "canopy/numpy_ufuncs.hpp"
#include "canopy/ops.hpp"
#include "canopy/x64.hpp"

namespace canopy {

/// Axes to reduce over; std::nullopt means all axes.
using Axes = std::optional<std::vector<int>>;

// Creation.
// A default dtype is jnp's: f32 (f64 in x64 mode, canopy/x64.hpp); integer ones i32 (i64).
Array zeros(const Shape& shape, DType dtype = default_float_dtype());  ///< all 0
Array ones(const Shape& shape, DType dtype = default_float_dtype());   ///< all 1
Array full(const Shape& shape, double value, DType dtype = default_float_dtype());  ///< all `value`
Array zeros_like(const Array& x);                   ///< zeros of x's shape and dtype
Array ones_like(const Array& x);                    ///< ones of x's shape and dtype
Array full_like(const Array& x, double value);      ///< `value` in x's shape and dtype
/// [0, stop) step 1, the default int (i32; i64 in x64 mode).
Array arange(std::int64_t stop);
/// [start, stop) by `step`: ceil((stop - start) / step) elements.
Array arange(double start, double stop, double step = 1, DType dtype = default_float_dtype());
/// `num` evenly spaced values from start to stop (stop included unless endpoint = false).
Array linspace(double start, double stop, std::int64_t num = 50, bool endpoint = true,
               DType dtype = default_float_dtype());
/// n x m matrix with ones on diagonal k (m = n when negative).
Array eye(std::int64_t n, std::int64_t m = -1, int k = 0, DType dtype = default_float_dtype());

// Promotion and broadcasting.
/// jnp.promote_types on strong dtypes.
DType promote_types(DType a, DType b);
/// jnp.result_type of several arrays (weak types defer).
DType result_type(const std::vector<Array>& xs);
/// The numpy broadcast of two shapes; ShapeError names `api` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* api = "broadcast_shapes");
/// Broadcasts x to `shape` (numpy rules).
Array broadcast_to(const Array& x, const Shape& shape);
/// Inserts size-1 axes at `axes` (positions in the result; negative counts from the end).
Array expand_dims(const Array& x, const std::vector<int>& axes);
/// Removes size-1 axes (all of them when `axes` is nullopt); ShapeError if a named axis is not 1.
Array squeeze(const Array& x, const Axes& axes = std::nullopt);
/// jnp.flip: reversed along `axis`, or along every axis when none is given.
Array flip(const Array& x, std::optional<int> axis = std::nullopt);
/// jnp.astype.
inline Array astype(const Array& x, DType d) { return x.astype(d); }

// Reductions (jnp): sum and prod accumulate bool and narrower integers in the default int (i32, or
// i64 in x64 mode; u32/u64 for unsigned ones); mean promotes integers to the default float.
Array sum(const Array& x, const Axes& axes = std::nullopt, bool keepdims = false);
/// One axis. Exactly `int`, so that `sum(x, 0.0)` cannot silently mean "axis 0".
template <std::same_as<int> I>
Array sum(const Array& x, I axis, bool keepdims = false) {
  return sum(x, Axes{{axis}}, keepdims);
}
Array mean(const Array& x, const Axes& axes = std::nullopt, bool keepdims = false);
/// One axis. Exactly `int`, so that `mean(x, 0.0)` cannot silently mean "axis 0".
template <std::same_as<int> I>
Array mean(const Array& x, I axis, bool keepdims = false) {
  return mean(x, Axes{{axis}}, keepdims);
}
Array max(const Array& x, const Axes& axes = std::nullopt, bool keepdims = false);
/// One axis. Exactly `int`, so that `max(x, 0.0)` cannot silently mean "axis 0".
template <std::same_as<int> I>
Array max(const Array& x, I axis, bool keepdims = false) {
  return max(x, Axes{{axis}}, keepdims);
}
Array min(const Array& x, const Axes& axes = std::nullopt, bool keepdims = false);
/// One axis. Exactly `int`, so that `min(x, 0.0)` cannot silently mean "axis 0".
template <std::same_as<int> I>
Array min(const Array& x, I axis, bool keepdims = false) {
  return min(x, Axes{{axis}}, keepdims);
}

// Cumulative reductions (jnp; the lax forms, with an axis and a direction, are in ops.hpp).
/// jnp.cumsum: running sums along `axis` (over the flattened array when nullopt) in `dtype`
/// (default: x's; bool becomes the default int, but narrow integers stay narrow, as in JAX); a
/// bool `dtype` accumulates x != 0 as integers and gives whether each running sum is nonzero.
Array cumsum(const Array& x, std::optional<int> axis = std::nullopt, std::optional<DType> dtype = std::nullopt);
/// jnp.cumprod: running products, as cumsum.
Array cumprod(const Array& x, std::optional<int> axis = std::nullopt, std::optional<DType> dtype = std::nullopt);
/// jnp.diff: the n-th forward difference along `axis` (x[1:] - x[:-1], n times; != for bool), after
/// joining `prepend` and `append` (a scalar one is broadcast to one slice of x) to x along it.
Array diff(const Array& x, int n = 1, int axis = -1, const std::optional<Array>& prepend = std::nullopt,
           const std::optional<Array>& append = std::nullopt);

// Statistics: logsumexp (jax.nn / jax.scipy.special), var and std with ddof (jnp).
/// jnp.all: whether every element along `axes` is true (nonzero; NaN counts as true), as a bool
/// Array; an empty reduction is true.
Array all(const Array& x, const Axes& axes = std::nullopt, bool keepdims = false);
/// One axis. Exactly `int`, as for sum.
template <std::same_as<int> I>
Array all(const Array& x, I axis, bool keepdims = false) {
  return all(x, Axes{{axis}}, keepdims);
}
/// jnp.any: whether some element along `axes` is true (nonzero), as a bool Array; an empty
/// reduction is false.
Array any(const Array& x, const Axes& axes = std::nullopt, bool keepdims = false);
/// One axis. Exactly `int`, as for sum.
template <std::same_as<int> I>
Array any(const Array& x, I axis, bool keepdims = false) {
  return any(x, Axes{{axis}}, keepdims);
}
/// jnp.array_equal: a bool scalar Array, true when a and b have the same shape and equal elements
/// (after promotion). Different shapes give false, not an error. NaN is unequal to itself unless
/// `equal_nan`.
Array array_equal(const Array& a, const Array& b, bool equal_nan = false);
/// log(sum(exp(x))) over `axes`, max-shifted so it neither overflows nor underflows; all -inf
/// (or an empty reduction) gives -inf. Integers promote to f32.
Array logsumexp(const Array& x, const Axes& axes = std::nullopt, bool keepdims = false);
/// One axis. Exactly `int`, as for sum.
template <std::same_as<int> I>
Array logsumexp(const Array& x, I axis, bool keepdims = false) {
  return logsumexp(x, Axes{{axis}}, keepdims);
}
/// Variance: mean of squared deviations from the mean, divided by (count - ddof) clamped at 0
/// as numpy does (so count <= ddof gives inf or NaN). Integers promote to f32.
Array var(const Array& x, const Axes& axes = std::nullopt, int ddof = 0, bool keepdims = false);
/// One axis. Exactly `int`, so that `var(x, 0.0)` cannot silently mean "axis 0".
template <std::same_as<int> I>
Array var(const Array& x, I axis, int ddof = 0, bool keepdims = false) {
  return var(x, Axes{{axis}}, ddof, keepdims);
}
/// Standard deviation: sqrt(var(x, axes, ddof, keepdims)) (jnp.std).
Array std(const Array& x, const Axes& axes = std::nullopt, int ddof = 0, bool keepdims = false);
/// One axis. Exactly `int`.
template <std::same_as<int> I>
Array std(const Array& x, I axis, int ddof = 0, bool keepdims = false) {
  return std(x, Axes{{axis}}, ddof, keepdims);
}

// Logical operations.
/// jnp.logical_*: operands of any dtype read as truth values (nonzero is true); bool results.
Array logical_and(const Array& x, const Array& y);
Array logical_or(const Array& x, const Array& y);
Array logical_xor(const Array& x, const Array& y);
Array logical_not(const Array& x);
/// jnp.invert: bitwise_not (logical not on bool).
inline Array invert(const Array& x) { return bitwise_not(x); }

/// jnp.einsum for one or two operands: "ij,jk->ik", "bhqd,bhkd->bhqk", "...ij,...jk->...ik",
/// "ij->ji", "ij->", implicit outputs ("ij,jk"). Lowered to sums, one dot_general and a
/// transpose; size-1 axes broadcast. Diagonals ("ii->i") and three or more operands are
/// ShapeErrors. `precision` is the dot_general's (as jnp.einsum's).
Array einsum(std::string_view subscripts, const Array& a);
Array einsum(std::string_view subscripts, const Array& a, const Array& b, const PrecisionConfig& precision = {});
Array einsum(std::string_view subscripts, const std::vector<Array>& operands, const PrecisionConfig& precision = {});

/// jnp.outer: the products of every element of a (flattened) with every one of b: [a.size, b.size].
Array outer(const Array& a, const Array& b);
/// jnp.tril: m with the elements above diagonal k of its last two axes zeroed (k > 0: above the
/// main diagonal, k < 0: below it). ShapeError below 2-D.
Array tril(const Array& m, int k = 0);
/// jnp.triu: m with the elements below diagonal k of its last two axes zeroed.
Array triu(const Array& m, int k = 0);
/// jnp.diagonal: the elements a[..., i, i + offset] of the plane of axis1 and axis2, along a new
/// last axis (the other axes keep their order).
Array diagonal(const Array& a, int offset = 0, int axis1 = 0, int axis2 = 1);
/// jnp.trace: the sum of diagonal(a, offset, axis1, axis2) along it, accumulated in `dtype`
/// (default: as sum). ShapeError when axis1 and axis2 are the same axis.
Array trace(const Array& a, int offset = 0, int axis1 = 0, int axis2 = 1, std::optional<DType> dtype = std::nullopt);

/// jnp.matmul: 1-D operands promoted to matrices, leading dims broadcast as a batch. `precision`
/// as lax.dot_general's.
Array matmul(const Array& a, const Array& b, const PrecisionConfig& precision = {});
/// jnp.dot: matmul for 1-D/2-D; sum over a's last and b's second-to-last axis in general.
Array dot(const Array& a, const Array& b, const PrecisionConfig& precision = {});

/// Elementwise choice: x where cond else y (broadcast and promoted).
Array where(const Array& cond, const Array& x, const Array& y);
/// where with a C++ scalar branch (weakly typed).
template <class S>
  requires std::is_arithmetic_v<S>
Array where(const Array& cond, const Array& x, S y) {
  return where(cond, x, detail::weak_scalar_of(y));
}
template <class S>
  requires std::is_arithmetic_v<S>
Array where(const Array& cond, S x, const Array& y) {
  return where(cond, detail::weak_scalar_of(x), y);
}

// jax.numpy names of the elementwise ops.
inline Array negative(const Array& x) { return neg(x); }
inline Array subtract(const Array& x, const Array& y) { return sub(x, y); }
inline Array multiply(const Array& x, const Array& y) { return mul(x, y); }
/// jnp.divide: true division (integers promote to float).
Array divide(const Array& x, const Array& y);
/// jnp.remainder: Python's %, with the sign of y.
Array remainder(const Array& x, const Array& y);
inline Array power(const Array& x, const Array& y) { return pow(x, y); }
inline Array maximum(const Array& x, const Array& y) { return max(x, y); }
inline Array minimum(const Array& x, const Array& y) { return min(x, y); }
/// maximum/minimum with a weakly typed C++ scalar (`maximum(x, 0)` is ReLU).
template <class S>
  requires std::is_arithmetic_v<S>
Array maximum(const Array& x, S y) {
  return max(x, detail::weak_scalar_of(y));
}
template <class S>
  requires std::is_arithmetic_v<S>
Array minimum(const Array& x, S y) {
  return min(x, detail::weak_scalar_of(y));
}
inline Array arctan2(const Array& x, const Array& y) { return atan2(x, y); }
inline Array equal(const Array& x, const Array& y) { return eq(x, y); }
inline Array not_equal(const Array& x, const Array& y) { return ne(x, y); }
inline Array less(const Array& x, const Array& y) { return lt(x, y); }
inline Array less_equal(const Array& x, const Array& y) { return le(x, y); }
inline Array greater(const Array& x, const Array& y) { return gt(x, y); }
inline Array greater_equal(const Array& x, const Array& y) { return ge(x, y); }
inline Array sigmoid(const Array& x) { return logistic(x); }
/// x * x.
inline Array square(const Array& x) { return mul(x, x); }
/// 1 / x (integers promote to float).
Array reciprocal(const Array& x);
inline Array isfinite(const Array& x) { return is_finite(x); }

// Indexing, joining, splitting and padding (jax.numpy names; one_hot is jax.nn.one_hot).
/// jnp.take: x's elements at `indices` along `axis` (flattened x when nullopt); the result has shape
/// x.shape[:axis] + indices.shape + x.shape[axis+1:]. As in JAX, mode fill_or_drop ("fill", the
/// default) counts negative indices in [-n, 0) from the end and reads `fill_value` (default NaN,
/// lowest signed, highest unsigned, true) for the others out of range; clip clamps to [0, n-1]
/// without wrapping negatives. Indices must be integers (TypeError).
Array take(const Array& x, const Array& indices, std::optional<int> axis = std::nullopt,
           GatherScatterMode mode = GatherScatterMode::fill_or_drop, std::optional<double> fill_value = std::nullopt);
/// jnp.take_along_axis: indices has x's rank and broadcasts against it outside `axis` (default -1;
/// nullopt flattens x and needs 1-D indices). Negative indices count from the end in every mode but
/// promise_in_bounds; out-of-range ones fill (default) or clamp (clip), as in JAX.
Array take_along_axis(const Array& x, const Array& indices, std::optional<int> axis = -1,
                      GatherScatterMode mode = GatherScatterMode::fill_or_drop,
                      std::optional<double> fill_value = std::nullopt);
/// jax.nn.one_hot: x[..., None] == arange(num_classes) as `dtype`, the class axis at `axis` of the
/// result; an index outside [0, num_classes) gives an all-zero row.
Array one_hot(const Array& x, std::int64_t num_classes, DType dtype = default_float_dtype(), int axis = -1);

/// What `x.at(indices)` returns (jnp's `x.at[i0, i1, ...]`): integer index arrays (or ints) for the
/// leading axes, broadcast together; negative indices count from the end. Nothing is mutated.
class AtIndexer {
 public:
  AtIndexer(Array x, std::vector<Array> indices) : x_(std::move(x)), indices_(std::move(indices)) {}
  /// x[indices]; by default (promise_in_bounds) out-of-range indices clamp, as JAX's get() does.
  Array get(GatherScatterMode mode = GatherScatterMode::promise_in_bounds,
            std::optional<double> fill_value = std::nullopt) const;
  /// x with x[indices] = values (broadcast, cast to x's dtype); out-of-range updates are dropped by
  /// default; with duplicate indices the last update wins.
  Array set(const Array& values, GatherScatterMode mode = GatherScatterMode::fill_or_drop) const;
  /// x with values added at x[indices]; duplicates accumulate (scatter-add).
  Array add(const Array& values, GatherScatterMode mode = GatherScatterMode::fill_or_drop) const;
  template <class S>
    requires std::is_arithmetic_v<S>
  Array set(S v, GatherScatterMode mode = GatherScatterMode::fill_or_drop) const {
    return set(detail::weak_scalar_of(v), mode);
  }
  template <class S>
    requires std::is_arithmetic_v<S>
  Array add(S v, GatherScatterMode mode = GatherScatterMode::fill_or_drop) const {
    return add(detail::weak_scalar_of(v), mode);
  }

 private:
  Array x_;
  std::vector<Array> indices_;
};

/// jax's/Python's `None`: a bound left out of a slice, an unmapped axis in vmap's in_axes.
inline constexpr std::nullopt_t none = std::nullopt;

/// Python's `start:stop:step` in a numpy-style index; `none` leaves a bound out:
/// `slice(1, none)` is `1:`, `slice(none, none, -1)` is `::-1`. Bounds count from the end when
/// negative and are clamped into range, as in Python.
struct Slice {
  std::optional<std::int64_t> start, stop;
  std::int64_t step = 1;
};
inline Slice slice(std::optional<std::int64_t> start, std::optional<std::int64_t> stop, std::int64_t step = 1) {
  return {start, stop, step};
}
/// `slice(none)` is the whole axis, `:`. (No other one-argument form: Python's slice(n) means
/// `:n`, which would read wrongly here; write slice(none, n).)
inline Slice slice(std::nullopt_t) { return {}; }
/// numpy's newaxis (None in an index): a new axis of size 1.
struct NewAxis {};
inline constexpr NewAxis newaxis{};
/// numpy's `...`: as many full slices as the other entries leave axes.
struct Ellipsis {};
inline constexpr Ellipsis ellipsis{};

/// One entry of a numpy-style index: an integer (negative counts from the end; out of range is
/// clamped, as jax does), a Slice, newaxis, ellipsis, or an integer Array (advanced indexing).
class Index {
 public:
  template <class I>
    requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
  Index(I i) : kind_(Kind::integer), integer_(static_cast<std::int64_t>(i)) {}  // NOLINT: x[0]
  Index(Slice s) : kind_(Kind::slice), slice_(s) {}                             // NOLINT
  Index(NewAxis) : kind_(Kind::newaxis) {}                                      // NOLINT
  Index(Ellipsis) : kind_(Kind::ellipsis) {}                                    // NOLINT
  Index(Array a) : kind_(Kind::array), array_(std::move(a)) {}                  // NOLINT

  enum class Kind { integer, slice, newaxis, ellipsis, array };
  Kind kind() const { return kind_; }
  std::int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }
  const Array& array() const { return array_; }

 private:
  Kind kind_;
  std::int64_t integer_ = 0;
  Slice slice_;
  Array array_;
};

/// jnp's `x[index]`: basic indexing (integers, slices, newaxis, ellipsis) lowers to slice, rev
/// and reshape; integer Arrays (advanced indexing, broadcast together, placed as numpy places
/// them) to gather. Differentiable and batchable like the primitives underneath. `x[i]` and
/// `x[{i, slice(1, none), newaxis}]` call it.
Array subscript(const Array& x, std::span<const Index> index);

/// jnp.stack: the arrays (all of one shape) joined along a new axis.
Array stack(const std::vector<Array>& xs, int axis = 0);
/// jnp.split into `sections` equal pieces along `axis` (ShapeError unless it divides evenly).
/// A template so that a braced list `split(x, {3})` means split points, as in numpy.
template <std::integral I>
std::vector<Array> split(const Array& x, I sections, int axis = 0);
/// jnp.split at the given points along `axis`: piece k is x[points[k-1]:points[k]] (numpy slicing:
/// negative points count from the end, points past the end clamp, a point before its predecessor
/// gives an empty piece, and the next piece starts at that point, as in numpy).
std::vector<Array> split(const Array& x, const std::vector<std::int64_t>& indices, int axis = 0);
namespace detail {
std::vector<Array> split_sections(const Array& x, std::int64_t sections, int axis);
}
template <std::integral I>
std::vector<Array> split(const Array& x, I sections, int axis) {
  return detail::split_sections(x, static_cast<std::int64_t>(sections), axis);
}
/// jnp.tile: x repeated reps[d] times along each axis; x gains leading axes when reps is longer
/// than its rank, reps gains leading 1s when shorter. ShapeError for a negative count.
Array tile(const Array& x, const std::vector<std::int64_t>& reps);
/// tile along the last axis. A template so that `tile(x, {2, 3})` means a vector of counts.
template <std::integral I>
Array tile(const Array& x, I reps) {
  return tile(x, std::vector<std::int64_t>{static_cast<std::int64_t>(reps)});
}
/// jnp.repeat: each element repeated `repeats` times along `axis` (of the flattened x when nullopt).
Array repeat(const Array& x, std::int64_t repeats, std::optional<int> axis = std::nullopt);
/// jnp.repeat with a count per element along `axis` (one count applies to all).
Array repeat(const Array& x, const std::vector<std::int64_t>& repeats, std::optional<int> axis = std::nullopt);
/// jnp.roll: the elements shifted `shift` places along `axis` (those pushed off the end come back at
/// the start); over the flattened array, reshaped back, when nullopt.
Array roll(const Array& x, std::int64_t shift, std::optional<int> axis = std::nullopt);
/// jnp.roll along several axes, shift[i] along axes[i] (one shift or one axis is broadcast).
Array roll(const Array& x, const std::vector<std::int64_t>& shift, const std::vector<int>& axes);

/// jnp.pad in "constant" mode: pad_width[d] = (before, after) elements of `constant_values` (a
/// single pair applies to every axis); negative widths are ShapeErrors (lax.pad allows them).
Array pad(const Array& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& pad_width,
          double constant_values = 0);
/// jnp.pad with the same width before and after every axis.
template <std::integral I>
Array pad(const Array& x, I pad_width, double constant_values = 0) {
  auto w = static_cast<std::int64_t>(pad_width);
  return pad(x, std::vector<std::pair<std::int64_t, std::int64_t>>{{w, w}}, constant_values);
}

// Products, arg-extrema, sorting and shifts (jax.numpy names).
/// jnp.prod: dtypes widen as in sum (integers wrap).
Array prod(const Array& x, const Axes& axes = std::nullopt, bool keepdims = false);
/// One axis. Exactly `int`, so that `prod(x, 0.0)` cannot silently mean "axis 0".
template <std::same_as<int> I>
Array prod(const Array& x, I axis, bool keepdims = false) {
  return prod(x, Axes{{axis}}, keepdims);
}
/// jnp.argmax: indices of the default int (i32; i64 in x64 mode) over `axis` (all elements flattened when nullopt); ShapeError if empty.
Array argmax(const Array& x, std::optional<int> axis = std::nullopt, bool keepdims = false);
/// jnp.argmin: as argmax, for the smallest element.
Array argmin(const Array& x, std::optional<int> axis = std::nullopt, bool keepdims = false);
/// jnp.sort along `axis` (flattened when nullopt); stable, NaNs last.
Array sort(const Array& x, std::optional<int> axis = -1);
/// jnp.argsort: indices (the default int) that sort x along `axis` (flattened when nullopt); stable.
Array argsort(const Array& x, std::optional<int> axis = -1);
/// jnp.left_shift.
inline Array left_shift(const Array& x, const Array& y) { return shift_left(x, y); }
/// jnp.right_shift: arithmetic on signed integers, logical on unsigned ones.
Array right_shift(const Array& x, const Array& y);

}  // namespace canopy
