// jvp, vjp, grad and value_and_grad on the caller's own pytrees, with jax's semantics:
// arguments and results are any pytrees with canopy::Array leaves, gradients come back in the
// arguments' own types, and every transform composes with every other (grad(grad(f)), jvp(grad(f))).
#pragma once

#include <functional>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "canopy/core/autodiff.hpp"
#include "canopy/numpy.hpp"
#include "canopy/transforms/tree_arrays.hpp"

namespace canopy {

/// Which positional arguments grad differentiates: `grad(f, argnums<0, 2>)`. One index gives
/// that argument's gradient; several give a std::tuple of them. Checked at compile time.
template <int... I>
struct Argnums {};
template <int... I>
inline constexpr Argnums<I...> argnums{};

/// `grad(f, has_aux)`: f returns std::pair{loss, aux}; aux (any pytree) is returned, not differentiated.
struct HasAux {};
inline constexpr HasAux has_aux{};

namespace detail {

template <class T>
struct is_pair_like : std::false_type {};
template <class A, class B>
struct is_pair_like<std::pair<A, B>> : std::true_type {};
template <class A, class B>
struct is_pair_like<std::tuple<A, B>> : std::true_type {};

/// The loss of grad: a scalar float Array, else TypeError naming grad and the shape.
inline void check_loss(const char* api, const Array& loss) {
  if (!loss.valid() || loss.ndim() != 0 || !is_floating(loss.dtype()))
    raise<TypeError>(api, "f's result", "",
                     concat("must be a scalar float Array, got ", loss.valid() ? to_string(loss.aval()) : "an empty Array"),
                     "reduce it first (sum, mean); for vector outputs use vjp or jacrev");
}

template <class Opts>
struct GradOptions;
template <>
struct GradOptions<std::tuple<>> {
  using argnums = Argnums<0>;
  static constexpr bool aux = false;
};
template <int... I, class... Rest>
struct GradOptions<std::tuple<Argnums<I...>, Rest...>> : GradOptions<std::tuple<Rest...>> {
  using argnums = Argnums<I...>;
};
template <class... Rest>
struct GradOptions<std::tuple<HasAux, Rest...>> : GradOptions<std::tuple<Rest...>> {
  static constexpr bool aux = true;
};

/// value_and_grad's work: returns (f's result, gradients).
template <bool Aux, int... I, class F, class... A>
auto value_and_grad_impl(const char* api, F& f, const A&... args) {
  static_assert(sizeof...(I) > 0, "canopy: argnums must name at least one argument");
  static_assert(((I >= 0 && I < static_cast<int>(sizeof...(A))) && ...),
                "canopy: grad's argnums names an argument f does not have");
  auto all = std::tuple<const A&...>(args...);
  auto diff = std::make_tuple(std::get<I>(all)...);  // the differentiated arguments, copied
  using Result = std::invoke_result_t<F&, const A&...>;
  std::optional<Result> traced_result;
  FlatFn flat = [&](const Arrays& xs) {
    std::size_t pos = 0;
    auto rebuilt = with_arrays(diff, xs, pos);
    auto call_args = std::tuple<A...>(args...);
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((std::get<I>(call_args) = std::get<K>(rebuilt)), ...);
    }(std::make_index_sequence<sizeof...(I)>{});
    traced_result.emplace(std::apply(f, call_args));
    Arrays out;
    if constexpr (Aux) {
      out.push_back(std::get<0>(*traced_result));
      append_arrays(std::get<1>(*traced_result), out);
    } else {
      static_assert(is_array_v<Result>, "canopy: grad's f must return a canopy::Array (or std::pair{loss, aux} with has_aux)");
      out.push_back(*traced_result);
    }
    check_loss(api, out[0]);
    return out;
  };
  (reject_float_leaves(api, "args[" + std::to_string(I) + "]", std::get<I>(all)), ...);
  const Arrays xs = arrays_of(diff);
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (!is_floating(xs[i].dtype())) {
      std::vector<std::string> names;
      (append_names("args[" + std::to_string(I) + "]", std::get<I>(all), names), ...);
      raise<TypeError>(api, "input", names.at(i), concat(to_string(xs[i].aval()), " is not a float array"),
                       "grad differentiates float inputs only (as jax); keep integer data out of argnums");
    }
  auto [outs, pullback] = vjp_flat(flat, xs);
  Arrays cts(outs.size());
  cts[0] = ones_like(outs[0]);
  Arrays grads = pullback(cts);
  std::size_t pos = 0;
  auto grad_trees = gradient_tree(diff, grads, pos);
  auto grad = [&] {
    if constexpr (sizeof...(I) == 1) return std::get<0>(std::move(grad_trees));
    else return grad_trees;
  }();
  if constexpr (Aux) {
    std::size_t p = 1;
    auto aux = with_arrays(std::get<1>(*traced_result), outs, p);
    return std::make_pair(std::make_pair(outs[0], std::move(aux)), std::move(grad));
  } else {
    return std::make_pair(outs[0], std::move(grad));
  }
}

template <class Opts, class F, int... I>
auto make_value_and_grad(const char* api, F f, Argnums<I...>) {
  return [f = std::move(f), api](const auto&... args) mutable {
    return value_and_grad_impl<GradOptions<Opts>::aux, I...>(api, f, args...);
  };
}

}  // namespace detail

/// jax.value_and_grad: a function returning (f(args...), gradient of f w.r.t. the argnums
/// arguments). f returns a scalar float Array (or, with has_aux, std::pair{loss, aux}, and the
/// value is then std::pair{loss, aux}). Options in any order: argnums<...>, has_aux.
template <class F, class... Opts>
auto value_and_grad(F f, Opts...) {
  using O = detail::GradOptions<std::tuple<Opts...>>;
  return detail::make_value_and_grad<std::tuple<Opts...>>("value_and_grad", std::move(f), typename O::argnums{});
}

/// jax.grad: a function returning the gradient of f (same type as the differentiated
/// argument; a std::tuple of them for several argnums; with has_aux, std::pair{grad, aux}).
template <class F, class... Opts>
auto grad(F f, Opts...) {
  using O = detail::GradOptions<std::tuple<Opts...>>;
  auto vg = detail::make_value_and_grad<std::tuple<Opts...>>("grad", std::move(f), typename O::argnums{});
  return [vg = std::move(vg)](const auto&... args) mutable {
    auto [value, g] = vg(args...);
    if constexpr (O::aux) return std::make_pair(std::move(g), std::move(value.second));
    else return g;
  };
}

/// jax.jvp: (f(primals...), the directional derivative along tangents...). `primals` and
/// `tangents` are std::tuples of matching pytrees (tangent Arrays with the primals' shapes).
template <class F, class... A>
auto jvp(F&& f, const std::tuple<A...>& primals, const std::tuple<A...>& tangents) {
  using Result = std::invoke_result_t<F&, const A&...>;
  std::optional<Result> traced;
  detail::reject_float_leaves_in("jvp", primals);
  Arrays ps = detail::arrays_of(primals), ts = detail::arrays_of(tangents);
  if (ps.size() != ts.size()) detail::require_same_structure("jvp", primals, tangents);
  detail::check_like("jvp", "tangent", ts, detail::avals_of(ps), [&] { return detail::argument_names(primals); });
  auto [outs, tangent_outs] = detail::jvp_flat(detail::flatten_fun(f, primals, traced), ps, ts);
  for (std::size_t i = 0; i < outs.size(); ++i)
    if (!tangent_outs[i].valid()) tangent_outs[i] = zeros_like(outs[i]);
  std::size_t p = 0, q = 0;
  Result primal_out = detail::with_arrays(*traced, outs, p);
  Result tangent_out = detail::with_arrays(*traced, tangent_outs, q);
  return std::make_pair(std::move(primal_out), std::move(tangent_out));
}

/// jax.vjp: (f(primals...), pullback) where pullback(cotangent of f's result) returns the
/// std::tuple of cotangents of the primals, in their own types.
template <class F, class... A>
auto vjp(F&& f, const A&... primals) {
  using Result = std::invoke_result_t<F&, const A&...>;
  auto args = std::make_tuple(primals...);
  detail::reject_float_leaves_in("vjp", args);
  std::optional<Result> traced;
  auto [outs, pullback] = detail::vjp_flat(detail::flatten_fun(f, args, traced), detail::arrays_of(args));
  std::size_t p = 0;
  Result out = detail::with_arrays(*traced, outs, p);
  auto pb = [pullback = std::move(pullback), args = std::move(args), out_avals = detail::avals_of(outs),
             shape = out](const Result& cotangent) {
    Arrays cts;
    detail::append_arrays(cotangent, cts);
    if (cts.size() != out_avals.size()) detail::require_same_structure("vjp", shape, cotangent);
    detail::check_like("vjp", "cotangent", cts, out_avals, [&] {
      std::vector<std::string> names;
      detail::append_names("output", shape, names);
      return names;
    });
    Arrays grads = pullback(cts);
    std::size_t pos = 0;
    return detail::gradient_tree(args, grads, pos);
  };
  return std::make_pair(std::move(out), std::move(pb));
}

/// jax.linearize: (f(primals...), f_jvp) where f_jvp(tangents...) returns the directional
/// derivative in f's result type, replaying the recorded linear map without re-running f.
template <class F, class... A>
auto linearize(F&& f, const A&... primals) {
  using Result = std::invoke_result_t<F&, const A&...>;
  auto args = std::make_tuple(primals...);
  detail::reject_float_leaves_in("linearize", args);
  std::optional<Result> traced;
  auto [outs, push] = detail::linearize_flat(detail::flatten_fun(f, args, traced), detail::arrays_of(args));
  std::size_t p = 0;
  Result out = detail::with_arrays(*traced, outs, p);
  auto f_jvp = [push = std::move(push), shape = out, args, in_avals = detail::avals_of(detail::arrays_of(args))](
                   const A&... tangents) {
    Arrays ts;
    (detail::append_arrays(tangents, ts), ...);
    if (ts.size() != in_avals.size()) detail::require_same_structure("linearize", args, std::make_tuple(tangents...));
    detail::check_like("linearize", "tangent", ts, in_avals, [&] { return detail::argument_names(args); });
    Arrays ys = push(ts);
    std::size_t pos = 0;
    return detail::with_arrays(shape, ys, pos);
  };
  return std::make_pair(std::move(out), std::move(f_jvp));
}

}  // namespace canopy
