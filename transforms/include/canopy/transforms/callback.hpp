// jax.pure_callback on the caller's pytrees: host C++ code (a routine of another library, a
// loop over raw data) called on concrete values from inside jit, vmap and grad.
#pragma once

#include <memory>
#include <tuple>
#include <utility>

#include "canopy/core/callback.hpp"
#include "canopy/transforms/tree_arrays.hpp"

namespace canopy {

/// What pure_callback does under vmap (jax's vmap_method): call it once per example, or once on
/// the whole batch with every argument given a leading batch axis (its results must have one).
enum class VmapMethod { sequential, broadcast_all };

/// jax.pure_callback: `f(args...)` run on concrete values, also where the arguments are traced
/// (under jit it is one equation of the program, run by the executor; under vmap see VmapMethod).
/// `result_shape` is any value of f's result type: the shapes and dtypes of its Array leaves are
/// what f must return. f must be pure (it may run any number of times, or not at all if its
/// result is unused). Not differentiable by itself: give it a rule with custom_vjp or custom_jvp.
template <class F, class R, class... A>
R pure_callback(VmapMethod method, F f, const R& result_shape, const A&... args) {
  Arrays xs, shapes;
  (detail::append_arrays(args, xs), ...);
  detail::append_arrays(result_shape, shapes);
  auto callback = std::make_shared<detail::HostCallback>();
  callback->vectorized = method == VmapMethod::broadcast_all;
  callback->fn = [f = std::move(f), skeleton = std::make_tuple(args...), result_shape](const Arrays& concrete) {
    std::size_t pos = 0;
    R r = std::apply(f, detail::with_arrays(skeleton, concrete, pos));
    Arrays out;
    detail::append_arrays(r, out);
    return out;
  };
  Arrays outs = detail::bind_pure_callback(std::move(callback), detail::avals_of(shapes), xs);
  std::size_t pos = 0;
  return detail::with_arrays(result_shape, outs, pos);
}

/// pure_callback called once per example under vmap.
template <class F, class R, class... A>
R pure_callback(F f, const R& result_shape, const A&... args) {
  return pure_callback(VmapMethod::sequential, std::move(f), result_shape, args...);
}

}  // namespace canopy
