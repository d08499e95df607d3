// Internal to cumsum.cpp, cumprod.cpp, cummax.cpp and cummin.cpp: what the four cumulative
// reductions share (lax.cumsum & co.): params, shape rule, batching rule and samples.
#pragma once

#include "../rules.hpp"

namespace canopy::detail {

/// The axis the running reduction walks (negative counts from the end) and its direction.
struct CumulativeParams {
  int axis = 0;
  bool reverse = false;
};

/// Numbers of any width (bool is jnp's to widen first); the shape and dtype stay.
inline Aval cumulative_aval(std::string_view prim, std::span<const Aval> avals, const CumulativeParams& p) {
  expect_kind(prim, avals[0], kFloat | kInt);
  normalize_axis(prim, p.axis, avals[0].ndim(), avals[0]);
  return Aval{avals[0].dtype, avals[0].shape, avals[0].weak_type};
}

inline int cumulative_axis(const Array& x, const CumulativeParams& p) {
  return p.axis < 0 ? p.axis + static_cast<int>(x.ndim()) : p.axis;
}

/// The batch axis to the front and the walked axis one further.
template <class P>
BatchResult batch_cumulative(std::span<const Array> x, std::span<const int> bdims, const CumulativeParams& p) {
  const Array front = batch_to_front(x[0], bdims[0]);
  const int rank = static_cast<int>(front.ndim()) - 1;
  CumulativeParams q = p;
  q.axis = (p.axis < 0 ? p.axis + rank : p.axis) + 1;
  return {{canopy::bind1<P>({front}, q)}, {0}};
}

/// jvp of cummax and cummin (`running` is the op itself): each result element takes the tangent of
/// the element holding its running extreme, k(i) = the latest j <= i (the earliest j >= i when
/// reversed) where x_j equals the running value, or is a NaN (which the running value then is).
template <class Running>
JvpResult cumulative_extreme_jvp(std::span<const Array> x, std::span<const Array> t, const CumulativeParams& p,
                                 Running running) {
  const Array y = running(x[0], p.axis, p.reverse);
  const int axis = cumulative_axis(x[0], p);
  const std::int64_t n = x[0].shape()[static_cast<std::size_t>(axis)];
  const Array index = iota(DType::i32, x[0].shape(), axis);
  const Array holds = logical_or(eq(x[0], y), ne(x[0], x[0]));
  const Array k = p.reverse ? cummin(where(holds, index, n), axis, true) : cummax(where(holds, index, -1), axis, false);
  return {{y}, {take_along_axis(t[0], k, axis, GatherScatterMode::clip)}};
}

/// Samples: leading, trailing, negative and middle axes, both directions, an empty axis, f32/f64
/// and i32 (of small magnitude, so products stay exact), plus the narrow and wide dtypes.
template <class Params>
std::vector<Sample<Params>> cumulative_samples(double lo, double hi) {
  std::vector<Sample<Params>> out;
  std::uint64_t seed = 11;
  for (DType d : {DType::f32, DType::f64, DType::i32}) {
    out.push_back({{sample_array(d, {6}, lo, hi, seed++)}, {0, false}, "1-d"});
    out.push_back({{sample_array(d, {6}, lo, hi, seed++)}, {0, true}, "1-d reversed"});
    out.push_back({{sample_array(d, {3, 5}, lo, hi, seed++)}, {1, false}, "rows"});
    out.push_back({{sample_array(d, {3, 5}, lo, hi, seed++)}, {0, true}, "columns reversed"});
    out.push_back({{sample_array(d, {2, 4, 3}, lo, hi, seed++)}, {-2, false}, "middle axis, negative"});
    out.push_back({{sample_array(d, {2, 0, 3}, lo, hi, seed++)}, {1, false}, "empty axis"});
  }
  for (DType d : narrow_and_wide_dtypes(kFloat | kInt))
    out.push_back({{sample_array(d, {2, 5}, lo, hi, seed++)}, {1, false}, std::string(name(d)) + " rows"});
  return out;
}

}  // namespace canopy::detail
