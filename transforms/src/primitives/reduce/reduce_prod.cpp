// `reduce_prod` (product over axes): rules, samples, op. Its kernels:
// src/backends/<kind>/reductions.cpp.
#include <algorithm>

#include "../rules.hpp"
#include "../common.hpp"

namespace canopy::prim {
struct ReduceProd {
  static constexpr std::string_view name = "reduce_prod";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::ReduceParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::reduce_aval(name, avals[0], params.axes, detail::kFloat | detail::kInt);
  }
  // jax's rule: the product taken as a tree of pairwise products, differentiated by the product
  // rule level by level. Exact where elements are zero (no division) and O(n) work.
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    const Array y = bind1<ReduceProd>({x[0]}, params);
    if (!t[0].valid()) return {{y}, {Array()}};
    const int r = static_cast<int>(x[0].ndim());
    std::vector<bool> red(x[0].ndim(), false);
    for (int a : params.axes) red[static_cast<std::size_t>(a < 0 ? a + r : a)] = true;
    std::vector<int> perm;
    std::vector<std::int64_t> kept;
    std::int64_t len = 1;  // the number of factors per product
    for (int i = 0; i < r; ++i)
      if (!red[static_cast<std::size_t>(i)]) perm.push_back(i), kept.push_back(x[0].shape()[static_cast<std::size_t>(i)]);
    for (int i = 0; i < r; ++i)
      if (red[static_cast<std::size_t>(i)]) perm.push_back(i), len *= x[0].shape()[static_cast<std::size_t>(i)];
    auto rows = [&](const Array& v) {
      auto dims = kept;
      dims.push_back(len);
      return reshape(canopy::transpose(v, perm), Shape(dims));
    };
    Array p = rows(x[0]), dp = rows(t[0]);
    const int last = static_cast<int>(kept.size());
    auto half = [&](const Array& v, std::int64_t from, std::int64_t to) {
      std::vector<std::int64_t> start(v.ndim(), 0), limit = v.shape().vec();
      start.back() = from;
      limit.back() = to;
      return slice(v, start, limit);
    };
    if (p.shape().back() == 0) return {{y}, {zeros_like(y)}};
    while (p.shape().back() > 1) {
      std::int64_t k = p.shape().back();
      if (k % 2 == 1) {  // pad with a factor 1 of tangent 0
        auto dims = p.shape().vec();
        dims.back() = 1;
        p = concatenate({p, ones(Shape(dims), p.dtype())}, last);
        dp = concatenate({dp, zeros(Shape(dims), dp.dtype())}, last);
        ++k;
      }
      const Array a = half(p, 0, k / 2), b = half(p, k / 2, k), da = half(dp, 0, k / 2), db = half(dp, k / 2, k);
      p = a * b;
      dp = da * b + a * db;
    }
    return {{y}, {reshape(dp, y.shape())}};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return {{reduce_prod(detail::batch_to_front(x[0], bdims[0]), detail::shift_axes(params.axes, x[0].ndim() - 1))}, {0}};
  }
  static std::vector<Sample<Params>> samples() { return detail::reduce_samples<Params>(detail::kFloat | detail::kInt); }
};
CANOPY_REGISTER_PRIMITIVE(ReduceProd);
}  // namespace canopy::prim

namespace canopy {
Array reduce_prod(const Array& x, const std::vector<int>& axes) {
  if (axes.empty()) return x;
  return bind1<prim::ReduceProd>({x}, {axes});
}
}  // namespace canopy
