// Internal to argmax.cpp and argmin.cpp: the shared shape rule and kernel of lax.argmax/argmin.
// Ties go to the smallest index; a NaN beats every number and the first NaN wins (XLA's
// comparator, so jnp.argmax/argmin agree with numpy on NaN).
#pragma once

#include <cmath>

#include "../common.hpp"

namespace canopy::detail {

/// Params of both primitives: one axis, and the dtype of the indices (any integer dtype).
struct ArgParams {
  int axis = 0;
  DType index_dtype = DType::i32;
};

inline Aval arg_aval(std::string_view prim, const Aval& a, const ArgParams& p) {
  expect_kind(prim, a, kAll);
  if (!is_integer(p.index_dtype))
    raise<TypeError>(prim, "index_dtype", "", concat(p.index_dtype, " is not an integer dtype"));
  const int ax = normalize_axis(prim, p.axis, a.ndim(), a);
  if (a.shape[static_cast<std::size_t>(ax)] == 0)
    raise<ShapeError>(prim, "axis", std::to_string(p.axis), concat("of ", to_string(a), " is empty"),
                      "an empty sequence has no arg-extremum");
  Aval out{p.index_dtype, {}, false};
  for (std::size_t i = 0; i < a.ndim(); ++i)
    if (static_cast<int>(i) != ax) out.shape.push_back(a.shape[i]);
  return out;
}

/// better(x, best): whether x replaces the current best (`greater` for argmax).
template <bool greater>
void eval_arg(std::span<const Array> in, std::span<Array> out, const ArgParams& p) {
  const Array& x = in[0];
  const int r = static_cast<int>(x.ndim()), ax = p.axis < 0 ? p.axis + r : p.axis;
  std::vector<int> perm;
  for (int i = 0; i < r; ++i) if (i != ax) perm.push_back(i);
  perm.push_back(ax);
  const Array xt = permuted_copy(x, perm);
  const std::int64_t rows = out[0].size(), len = x.shape()[static_cast<std::size_t>(ax)];
  visit_dtype(x.dtype(), [&]<class T>(std::type_identity<T>) {
    using C = compute_type_t<T>;
    const T* v = static_cast<const T*>(cdata(xt));
    for (std::int64_t i = 0; i < rows; ++i) {
      const T* row = v + i * len;
      std::int64_t best = 0;
      C bv = static_cast<C>(row[0]);
      for (std::int64_t j = 1; j < len; ++j) {
        const C c = static_cast<C>(row[j]);
        bool take;
        if constexpr (std::is_floating_point_v<C>) {
          if (std::isnan(bv)) break;  // the first NaN is final
          take = std::isnan(c) || (greater ? c > bv : c < bv);
        } else {
          take = greater ? c > bv : c < bv;
        }
        if (take) { best = j; bv = c; }
      }
      visit_dtype(p.index_dtype, [&]<class I>(std::type_identity<I>) {  // any integer dtype (abstract_eval)
        if constexpr (std::is_integral_v<I>) static_cast<I*>(mutable_data(out[0]))[i] = static_cast<I>(best);
      });
    }
  });
}

template <class Params>
std::vector<Sample<Params>> arg_samples() {
  std::vector<Sample<Params>> s;
  std::uint64_t seed = 31;
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::bool_}) {
    s.push_back({{sample_array(d, {3, 4}, -3, 3, seed++)}, {1, DType::i32}, "last axis"});
    s.push_back({{sample_array(d, {3, 4}, -3, 3, seed++)}, {0, DType::u32}, "first axis, u32 indices"});
    s.push_back({{sample_array(d, {2, 0, 3}, -3, 3, seed++)}, {-1, DType::i32}, "empty other dim"});
    s.push_back({{sample_array(d, {5}, -3, 3, seed++)}, {0, DType::i32}, "to a scalar"});
  }
  // Operands and index dtypes of other widths.
  s.push_back({{sample_array(DType::u8, {3, 4}, 0, 9, seed++)}, {1, DType::i64}, "u8, i64 indices"});
  s.push_back({{sample_array(DType::f16, {3, 4}, -3, 3, seed++)}, {0, DType::u8}, "f16, u8 indices"});
  return s;
}

/// eval_arg on cuda:k: i64 indices from the kernel, converted to the index dtype.
template <bool greater>
void cuda_arg(std::span<const Array> in, std::span<Array> out, const ArgParams& p) {
  const Array& x = in[0];
  const int r = static_cast<int>(x.ndim()), ax = p.axis < 0 ? p.axis + r : p.axis;
  const int gpu = gpu_of(out[0]);
  if (p.index_dtype == DType::i64) {
    kernels::cuda::argminmax(greater, x.dtype(), cdata(x), x.shape(), ax, static_cast<std::int64_t*>(mutable_data(out[0])), gpu);
    return;
  }
  const Array idx = make_concrete({DType::i64, out[0].shape(), false}, out[0].device());
  kernels::cuda::argminmax(greater, x.dtype(), cdata(x), x.shape(), ax, static_cast<std::int64_t*>(mutable_data(idx)), gpu);
  kernels::cuda::convert(DType::i64, p.index_dtype, cdata(idx), mutable_data(out[0]), out[0].size(), gpu);
}

}  // namespace canopy::detail
