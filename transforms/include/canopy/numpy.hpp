// jax.numpy-style functions composed from the primitive ops: creation, promotion,
// broadcasting helpers, reductions with keepdims, matmul/dot, where, and jnp's names.
#pragma once

#include <concepts>
#include <optional>
#include <vector>

#include "canopy/array.hpp"
#include "canopy/ops.hpp"

namespace canopy {

/// Axes to reduce over; std::nullopt means all axes.
using Axes = std::optional<std::vector<int>>;

// Creation.
Array zeros(const Shape& shape, DType dtype = DType::f32);  ///< all 0
Array ones(const Shape& shape, DType dtype = DType::f32);   ///< all 1
Array full(const Shape& shape, double value, DType dtype = DType::f32);  ///< all `value`
Array zeros_like(const Array& x);                   ///< zeros of x's shape and dtype
Array ones_like(const Array& x);                    ///< ones of x's shape and dtype
Array full_like(const Array& x, double value);      ///< `value` in x's shape and dtype
/// [0, stop) step 1, i32.
Array arange(std::int64_t stop);
/// [start, stop) by `step`: ceil((stop - start) / step) elements.
Array arange(double start, double stop, double step = 1, DType dtype = DType::f32);
/// `num` evenly spaced values from start to stop (stop included unless endpoint = false).
Array linspace(double start, double stop, std::int64_t num = 50, bool endpoint = true, DType dtype = DType::f32);
/// n x m matrix with ones on diagonal k (m = n when negative).
Array eye(std::int64_t n, std::int64_t m = -1, int k = 0, DType dtype = DType::f32);

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
/// jnp.astype.
inline Array astype(const Array& x, DType d) { return x.astype(d); }

// Reductions (jnp): sum promotes bool to i32; mean promotes integers to f32.
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

// Linear algebra.
/// jnp.matmul: 1-D operands promoted to matrices, leading dims broadcast as a batch.
Array matmul(const Array& a, const Array& b);
/// jnp.dot: matmul for 1-D/2-D; sum over a's last and b's second-to-last axis in general.
Array dot(const Array& a, const Array& b);

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

}  // namespace canopy
