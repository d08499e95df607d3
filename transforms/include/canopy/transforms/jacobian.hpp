// jacfwd, jacrev and hessian of functions from an Array to an Array: the Jacobian has shape
// out.shape + in.shape, built by mapping jvp (columns) or vjp (rows) over a basis with vmap.
#pragma once

#include "canopy/transforms/autodiff.hpp"
#include "canopy/transforms/vmap.hpp"

namespace canopy {
namespace detail {

/// The n x shape(x) basis of x's space: n = x.size() unit vectors in x's shape and dtype.
inline Array basis_like(const Array& x) {
  auto dims = x.shape().vec();
  dims.insert(dims.begin(), x.size());
  return reshape(eye(x.size(), -1, 0, x.dtype()), Shape(dims));
}

/// Moves the leading axis of `stacked` (the basis index) behind the others: [n, *out] -> [*out, *in].
inline Array basis_axis_last(const Array& stacked, const Shape& out, const Shape& in) {
  std::vector<int> perm;
  for (std::size_t i = 1; i < stacked.ndim(); ++i) perm.push_back(static_cast<int>(i));
  perm.push_back(0);
  auto dims = out.vec();
  for (std::int64_t d : in) dims.push_back(d);
  return reshape(transpose(stacked, perm), Shape(dims));
}

template <class F>
void require_array_to_array() {
  static_assert(std::is_same_v<std::invoke_result_t<F&, const Array&>, Array>,
                "canopy: jacfwd/jacrev/hessian take a function from one Array to one Array");
}

}  // namespace detail

/// jax.jacfwd (one Array argument): forward mode, one jvp per input element, batched by vmap.
template <class F>
auto jacfwd(F f) {
  detail::require_array_to_array<F>();
  return [f = std::move(f)](const Array& x) mutable {
    Array y = f(x);
    auto column = [&](const Array& t) { return jvp(f, std::make_tuple(x), std::make_tuple(t)).second; };
    Array cols = vmap(column)(detail::basis_like(x));  // [n_in, *out]
    return detail::basis_axis_last(cols, y.shape(), x.shape());
  };
}

/// jax.jacrev (one Array argument): reverse mode, one pullback per output element, batched by vmap.
template <class F>
auto jacrev(F f) {
  detail::require_array_to_array<F>();
  return [f = std::move(f)](const Array& x) mutable {
    auto [y, pullback] = vjp(f, x);
    Array rows = vmap([&](const Array& ct) { return std::get<0>(pullback(ct)); })(detail::basis_like(y));  // [n_out, *in]
    auto dims = y.shape().vec();
    for (std::int64_t d : x.shape()) dims.push_back(d);
    return reshape(rows, Shape(dims));
  };
}

/// jax.hessian: jacfwd(jacrev(f)) for f from an Array to a scalar Array.
template <class F>
auto hessian(F f) {
  return jacfwd(jacrev(std::move(f)));
}

}  // namespace canopy
