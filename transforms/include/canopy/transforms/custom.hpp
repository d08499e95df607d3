// custom_jvp, custom_vjp and checkpoint on the caller's pytrees, with jax's semantics.
#pragma once

#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "canopy/core/custom.hpp"
#include "canopy/transforms/autodiff.hpp"

namespace canopy {

/// jax.custom_jvp: f whose derivative is `rule(primals, tangents)`, which takes std::tuples of
/// f's arguments and of their tangents and returns std::pair{f's result, its tangent}. The rule
/// is used by jvp, grad (its tangent output must be linear in the tangents), and their
/// compositions; vmap batches f and the rule.
///   auto log1pexp = custom_jvp([](const Array& x) { return log1p(exp(x)); },
///       [](auto primals, auto tangents) { auto [x] = primals; auto [t] = tangents;
///         return std::make_pair(log1p(exp(x)), t * logistic(x)); });
template <class F, class Rule>
auto custom_jvp(F f, Rule rule) {
  return [f = std::move(f), rule = std::move(rule)](const auto&... args) mutable {
    using Result = std::invoke_result_t<F&, decltype(args)...>;
    auto arg_tuple = std::make_tuple(args...);
    std::optional<Result> result;
    detail::CustomRule r;
    r.name = "custom_jvp";
    r.fun = detail::flatten_fun(f, arg_tuple, result);
    r.jvp = [&](const Arrays& ps, const Arrays& ts) {
      std::size_t p = 0, q = 0;
      auto primals = detail::with_arrays(arg_tuple, ps, p);
      auto tangents = detail::with_arrays(arg_tuple, ts, q);
      auto [out, tangent_out] = rule(primals, tangents);
      result.emplace(out);
      Arrays o, ot;
      detail::append_arrays(out, o);
      detail::append_arrays(tangent_out, ot);
      return std::make_pair(o, ot);
    };
    Arrays outs = detail::bind_custom(r, detail::arrays_of(arg_tuple));
    std::size_t pos = 0;
    return detail::with_arrays(*result, outs, pos);
  };
}

/// jax.custom_vjp: f whose reverse-mode derivative is given by `fwd(args...)`, returning
/// std::pair{f's result, residuals (any pytree)}, and `bwd(residuals, cotangent)`, returning the
/// std::tuple of the arguments' cotangents. An empty `Array()` is JAX's None: a zero cotangent
/// (the natural answer for integer arguments, which have no derivative). Forward mode (jvp) of it raises, as in jax. This is
/// also how an external C++ routine gets a hand-written gradient.
template <class F, class Fwd, class Bwd>
auto custom_vjp(F f, Fwd fwd, Bwd bwd) {
  return [f = std::move(f), fwd = std::move(fwd), bwd = std::move(bwd)](const auto&... args) mutable {
    using Result = std::invoke_result_t<F&, decltype(args)...>;
    using FwdOut = std::invoke_result_t<Fwd&, decltype(args)...>;
    using Residuals = typename FwdOut::second_type;
    auto arg_tuple = std::make_tuple(args...);
    // The structures bwd rebuilds outlive this call: the pullback may run much later.
    struct Trees {
      std::optional<Result> result;
      std::optional<Residuals> residuals;
    };
    auto trees = std::make_shared<Trees>();
    std::optional<Result>& result = trees->result;
    detail::CustomRule r;
    r.name = "custom_vjp";
    r.fun = detail::flatten_fun(f, arg_tuple, result);
    r.fwd = [&](const Arrays& ps) {
      std::size_t p = 0;
      auto primals = detail::with_arrays(arg_tuple, ps, p);
      auto [out, res] = std::apply(fwd, primals);
      trees->result.emplace(out);
      trees->residuals.emplace(res);
      Arrays o, rs;
      detail::append_arrays(out, o);
      detail::append_arrays(res, rs);
      return std::make_pair(o, rs);
    };
    r.bwd = [bwd, trees](const Arrays& rs, const Arrays& cts) mutable {
      std::size_t p = 0, q = 0;
      auto res = detail::with_arrays(*trees->residuals, rs, p);
      auto ct = detail::with_arrays(*trees->result, cts, q);
      auto arg_cts = bwd(res, ct);
      Arrays out;
      detail::append_arrays(arg_cts, out);
      return out;
    };
    Arrays outs = detail::bind_custom(r, detail::arrays_of(arg_tuple));
    std::size_t pos = 0;
    return detail::with_arrays(*result, outs, pos);
  };
}

/// jax.checkpoint (remat): the same function, but reverse mode keeps only its inputs and
/// recomputes its intermediates during the backward pass, trading compute for memory.
template <class F>
auto checkpoint(F f) {
  return [f = std::move(f)](const auto&... args) mutable {
    auto fwd = [&](const auto&... xs) { return std::make_pair(f(xs...), std::make_tuple(xs...)); };
    auto bwd = [f](const auto& inputs, const auto& ct) mutable {  // runs in the pullback: owns a copy of f
      return std::apply([&](const auto&... xs) { return vjp(f, xs...).second(ct); }, inputs);
    };
    return custom_vjp(f, fwd, bwd)(args...);
  };
}

}  // namespace canopy
