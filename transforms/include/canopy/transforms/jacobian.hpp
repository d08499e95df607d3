// jacfwd, jacrev and hessian of a function of one pytree argument. As in JAX the Jacobian is
// the output's structure with every Array leaf replaced by a tree shaped like the input, whose
// leaves have shape out_leaf.shape + in_leaf.shape: an Array -> Array function gives one Array,
// a loss of a Params struct gives a Params of Jacobian rows, a Params -> Array hessian gives a
// Params of Params (so a struct that must hold other leaf types is a template over its leaf
// type, as tree_map requires). Built by mapping jvp (columns) or vjp (rows) over a basis with vmap.
#pragma once

#include <optional>

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

/// `a` followed by `b`.
inline Shape joined_shape(const Shape& a, const Shape& b) {
  auto dims = a.vec();
  for (std::int64_t d : b) dims.push_back(d);
  return Shape(dims);
}

/// Moves the leading axis of `stacked` (the basis index) behind the others: [n, *out] -> [*out, *in].
inline Array basis_axis_last(const Array& stacked, const Shape& out, const Shape& in) {
  std::vector<int> perm;
  for (std::size_t i = 1; i < stacked.ndim(); ++i) perm.push_back(static_cast<int>(i));
  perm.push_back(0);
  return reshape(transpose(stacked, perm), joined_shape(out, in));
}

/// blocks[j][i] = d out_leaf_j / d in_leaf_i as the output tree of input trees (non-Array
/// output leaves stay as they are; non-Array input leaves come back value-initialised).
template <class Out, class In>
auto assemble_jacobian(const Out& out, const In& in, const std::vector<Arrays>& blocks) {
  std::size_t j = 0;
  return tree_map(
      [&](const auto& leaf) {
        if constexpr (is_array_v<decltype(leaf)>) {
          std::size_t pos = 0;
          return gradient_tree(in, blocks[j++], pos);
        } else {
          return leaf;
        }
      },
      out);
}

}  // namespace detail

/// jax.jacfwd (one pytree argument): forward mode, one jvp per input element, batched by vmap.
template <class F>
auto jacfwd(F f) {
  return [f = std::move(f)]<class A>(const A& x) mutable {
    using Result = std::remove_cvref_t<std::invoke_result_t<F&, const A&>>;
    const std::tuple<A> args{x};
    detail::reject_float_leaves_in("jacfwd", args);
    std::optional<Result> traced;
    const detail::FlatFn flat = detail::flatten_fun(f, args, traced);
    const Arrays ps = detail::arrays_of(args);
    const Arrays ys = flat(ps);
    const Result result = *traced;  // concrete: the vmapped jvps below leave tracers in `traced`
    std::vector<Arrays> blocks(ys.size(), Arrays(ps.size()));
    for (std::size_t i = 0; i < ps.size(); ++i) {
      detail::FlatFn column = [&](const Arrays& basis) {
        Arrays ts;
        for (std::size_t k = 0; k < ps.size(); ++k) ts.push_back(k == i ? basis[0] : zeros_like(ps[k]));
        auto [outs, tangents] = detail::jvp_flat(flat, ps, ts);
        for (std::size_t o = 0; o < outs.size(); ++o)
          if (!tangents[o].valid()) tangents[o] = zeros_like(outs[o]);
        return tangents;
      };
      detail::VmapSpec spec;
      spec.in_axes = {0};
      const Arrays cols = detail::vmap_flat(column, {detail::basis_like(ps[i])}, spec);  // [n_in, *out_j]
      for (std::size_t j = 0; j < ys.size(); ++j) blocks[j][i] = detail::basis_axis_last(cols[j], ys[j].shape(), ps[i].shape());
    }
    return detail::assemble_jacobian(result, x, blocks);
  };
}

/// jax.jacrev (one pytree argument): reverse mode, one pullback per output element, batched by vmap.
template <class F>
auto jacrev(F f) {
  return [f = std::move(f)]<class A>(const A& x) mutable {
    using Result = std::remove_cvref_t<std::invoke_result_t<F&, const A&>>;
    const std::tuple<A> args{x};
    detail::reject_float_leaves_in("jacrev", args);
    std::optional<Result> traced;
    const Arrays ps = detail::arrays_of(args);
    // Named members, not a structured binding: clang 14 cannot capture a binding in a lambda.
    auto outs_and_pullback = detail::vjp_flat(detail::flatten_fun(f, args, traced), ps);
    const Arrays& outs = outs_and_pullback.first;
    const detail::Pullback& pullback = outs_and_pullback.second;
    const Result result = [&] {
      std::size_t pos = 0;
      return detail::with_arrays(*traced, outs, pos);
    }();
    std::vector<Arrays> blocks(outs.size());
    for (std::size_t j = 0; j < outs.size(); ++j) {
      detail::FlatFn row = [&](const Arrays& basis) {
        Arrays cts;
        for (std::size_t k = 0; k < outs.size(); ++k) cts.push_back(k == j ? basis[0] : zeros_like(outs[k]));
        return pullback(cts);
      };
      detail::VmapSpec spec;
      spec.in_axes = {0};
      const Arrays rows = detail::vmap_flat(row, {detail::basis_like(outs[j])}, spec);  // [n_out, *in_i]
      for (std::size_t i = 0; i < rows.size(); ++i)
        blocks[j].push_back(reshape(rows[i], detail::joined_shape(outs[j].shape(), ps[i].shape())));
    }
    return detail::assemble_jacobian(result, x, blocks);
  };
}

/// jax.hessian: jacfwd(jacrev(f)) for f from one pytree to a scalar Array.
template <class F>
auto hessian(F f) {
  return jacfwd(jacrev(std::move(f)));
}

}  // namespace canopy
