// The CPU backend's reductions: reduce_sum/max/min (kernels/cpu/loops/reduce.cpp), reduce_prod,
// argmax/argmin and the cumulative reductions.
#include <cmath>
#include <type_traits>
#include <vector>

#include "../../primitives/common.hpp"
#include "../../primitives/reduce/argminmax.hpp"
#include "../../primitives/reduce/cumulative.hpp"

namespace canopy::detail {
namespace {

template <kernels::ReduceOp op>
void reduce(std::span<const Array> in, std::span<Array> out, const ReduceParams& params) {
  kernels::cpu::reduce(op, in[0].dtype(), cdata(in[0]), in[0].shape(), sorted_axes(params.axes, in[0].ndim()),
                       mutable_data(out[0]));
}

// The reduced axes moved last (a kernel-level copy), then each row multiplied in order.
void reduce_prod(std::span<const Array> in, std::span<Array> out, const ReduceParams& params) {
  const Array& x = in[0];
  const int r = static_cast<int>(x.ndim());
  std::vector<bool> red(x.ndim(), false);
  for (int a : params.axes) red[static_cast<std::size_t>(a < 0 ? a + r : a)] = true;
  std::vector<int> perm;
  for (int i = 0; i < r; ++i) if (!red[static_cast<std::size_t>(i)]) perm.push_back(i);
  for (int i = 0; i < r; ++i) if (red[static_cast<std::size_t>(i)]) perm.push_back(i);
  const Array xt = permuted_copy(x, perm);
  const std::int64_t rows = out[0].size(), len = rows == 0 ? 0 : x.size() / rows;
  visit_dtype(x.dtype(), [&]<class T>(std::type_identity<T>) {
    if constexpr (!std::is_same_v<T, bool>) {
      using C = compute_type_t<T>;
      // Integers wrap; floats multiply in double, as the GPU does (a product of 250,000 f32
      // values near 1 taken in f32 was off by 3e-4).
      using W = std::conditional_t<std::is_floating_point_v<C>, double, wrapping_t<C>>;
      const T* p = static_cast<const T*>(cdata(xt));
      T* o = static_cast<T*>(mutable_data(out[0]));
      for (std::int64_t i = 0; i < rows; ++i) {
        W acc = W(1);
        for (std::int64_t j = 0; j < len; ++j) acc = static_cast<W>(acc * static_cast<W>(static_cast<C>(p[i * len + j])));
        o[i] = T(static_cast<C>(acc));
      }
    }
  });
}

/// better(x, best): whether x replaces the current best (`greater` for argmax).
template <bool greater>
void arg_extremum(std::span<const Array> in, std::span<Array> out, const ArgParams& p) {
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

template <kernels::CumulativeOp op>
void cumulative(std::span<const Array> in, std::span<Array> out, const CumulativeParams& p) {
  kernels::cpu::cumulative(op, in[0].dtype(), cdata(in[0]), mutable_data(out[0]), in[0].shape(),
                           cumulative_axis(in[0], p), p.reverse);
}

using kernels::CumulativeOp;
using kernels::ReduceOp;
[[maybe_unused]] const bool registered = register_kernels(Device::Kind::cpu, {
    typed_kernel<ReduceParams, reduce<ReduceOp::sum>>("reduce_sum"),
    typed_kernel<ReduceParams, reduce<ReduceOp::max>>("reduce_max"),
    typed_kernel<ReduceParams, reduce<ReduceOp::min>>("reduce_min"),
    typed_kernel<ReduceParams, reduce_prod>("reduce_prod"),
    typed_kernel<ArgParams, arg_extremum<true>>("argmax"),
    typed_kernel<ArgParams, arg_extremum<false>>("argmin"),
    typed_kernel<CumulativeParams, cumulative<CumulativeOp::sum>>("cumsum"),
    typed_kernel<CumulativeParams, cumulative<CumulativeOp::prod>>("cumprod"),
    typed_kernel<CumulativeParams, cumulative<CumulativeOp::max>>("cummax"),
    typed_kernel<CumulativeParams, cumulative<CumulativeOp::min>>("cummin"),
});

}  // namespace
}  // namespace canopy::detail
