// Control flow with pytree carries, with jax.lax's semantics: cond, switch_, while_loop,
// fori_loop and scan. On concrete values outside any transformation they run as plain loops.
// Under a transformation or jit, scan and fori_loop stage their body once into a `scan`
// primitive (a loop of a compiled body: reverse mode keeps residuals per step, not an unrolled
// trace), and a while_loop whose predicate is only known at run time becomes a `while`
// primitive. cond and switch_ with a concrete predicate run one branch; with a batched or
// traced one they run every branch and select. Reverse mode differentiates through cond,
// switch_, fori_loop and scan, and, as in jax, not through while_loop.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "canopy/core/control.hpp"
#include "canopy/core/control_flow.hpp"
#include "canopy/numpy.hpp"
#include "canopy/transforms/tree_arrays.hpp"

namespace canopy {
namespace detail {

/// Throws unless `a` and `b` have the same structure and Array leaves of equal shape and dtype.
template <class T>
void require_same_avals(const char* api, const char* what, const T& a, const T& b) {
  auto da = tree_structure(a), db = tree_structure(b);
  if (!(da == db))
    raise<TypeError>(api, what, "", concat("differ in structure: ", da.to_string(), " vs ", db.to_string()));
  std::vector<std::string> paths;
  tree_map_with_path(
      [&](const KeyPath& p, const auto& leaf) {
        if constexpr (is_array_v<decltype(leaf)>) paths.push_back(keystr(p));
        return leaf;
      },
      a);
  Arrays xa, xb;
  append_arrays(a, xa);
  append_arrays(b, xb);
  for (std::size_t i = 0; i < xa.size(); ++i)
    if (!(xa[i].shape() == xb[i].shape()) || xa[i].dtype() != xb[i].dtype())
      raise<TypeError>(api, what, paths[i].empty() ? "the root" : paths[i],
                       concat("differ: ", to_string(xa[i].aval()), " vs ", to_string(xb[i].aval())));
}

/// Leafwise select_n(which, cases) over trees of one structure (cases[k] where which == k).
template <class T>
T select_trees(const Array& which, const std::vector<T>& cases) {
  std::vector<Arrays> leaves(cases.size());
  for (std::size_t k = 0; k < cases.size(); ++k) append_arrays(cases[k], leaves[k]);
  Arrays out;
  for (std::size_t i = 0; i < leaves[0].size(); ++i) {
    Arrays ks;
    for (auto& l : leaves) ks.push_back(l[i]);
    Array w = which;
    if (w.ndim() == 0 && ks[0].ndim() > 0) w = broadcast_to(w, ks[0].shape());
    out.push_back(select_n(w, ks));
  }
  std::size_t pos = 0;
  return with_arrays(cases[0], out, pos);
}

inline void require_scalar(const char* api, const char* what, const Array& x, bool boolean) {
  bool ok = x.ndim() == 0 && (boolean ? x.dtype() == DType::bool_ : (is_integer(x.dtype()) || x.dtype() == DType::bool_));
  if (!ok)
    raise<TypeError>(api, what, "", concat("must be a scalar ", boolean ? "bool" : "integer", ", got ", to_string(x.aval())));
}

template <class CondFn, class BodyFn, class Carry>
Carry staged_while_loop(CondFn& cond_fun, BodyFn& body_fun, const Carry& carry);

/// cond/switch_ as a `cond` primitive, for an index known only at run time: every branch is
/// traced once on the operands' avals; they must agree in structure and avals.
template <class R, class Branch, class... Ops>
R staged_cond(const Array& index, const std::vector<Branch>& branches, const Ops&... operands) {
  auto args = std::tuple<const Ops&...>(operands...);
  Arrays leaves;
  (append_arrays(operands, leaves), ...);
  std::vector<std::optional<R>> results(branches.size());
  std::vector<FlatFn> flat;
  for (std::size_t k = 0; k < branches.size(); ++k)
    flat.push_back([&, k](const Arrays& v) {
      std::size_t pos = 0;
      auto rebuilt = std::apply([&](const auto&... a) { return std::tuple<Ops...>{with_arrays(a, v, pos)...}; }, args);
      results[k].emplace(std::apply(branches[k], rebuilt));
      if (k > 0 && results[0]) require_same_avals(branches.size() > 2 ? "switch_" : "cond", "branch outputs", *results[0], *results[k]);
      Arrays out;
      append_arrays(*results[k], out);
      return out;
    });
  Arrays outs = cond_flat(index, flat, leaves);
  std::size_t pos = 0;
  return with_arrays(*results[0], outs, pos);
}

template <class Carry>
void require_not_reverse_mode(const Carry& c) {
  Arrays xs;
  append_arrays(c, xs);
  for (const Array& x : xs)
    if (recorded_for_reverse_mode(x))
      raise<UnimplementedRule>("while_loop", "reverse-mode differentiation", "",
                               "is not supported: the trip count is unknown, so there is no transpose (as in jax)",
                               "use fori_loop with a static trip count or scan; forward mode (jvp, jacfwd) works");
}

}  // namespace detail

/// lax.cond: true_fn(operands...) if pred else false_fn(operands...). Both return the same type;
/// when pred is batched by vmap both run and their results must agree in structure and shapes.
template <class TrueFn, class FalseFn, class... Ops>
auto cond(const Array& pred, TrueFn&& true_fn, FalseFn&& false_fn, const Ops&... operands) {
  using R = std::invoke_result_t<TrueFn&, const Ops&...>;
  static_assert(std::is_same_v<R, std::invoke_result_t<FalseFn&, const Ops&...>>,
                "canopy: cond's branches must return the same type");
  detail::require_scalar("cond", "pred", pred, true);
  if (auto c = detail::concrete_scalar(pred)) return *c ? true_fn(operands...) : false_fn(operands...);
  if (!detail::any_lane(pred)) {  // known only at run time: a cond primitive (false is branch 0)
    using Branch = std::function<R(const Ops&...)>;
    return detail::staged_cond<R>(pred, std::vector<Branch>{Branch(false_fn), Branch(true_fn)}, operands...);
  }
  R t = true_fn(operands...), f = false_fn(operands...);
  detail::require_same_avals("cond", "branch outputs", t, f);
  return detail::select_trees(pred, std::vector<R>{f, t});
}

/// lax.switch: branches[index](operands...), index clamped to [0, branches.size() - 1] as jax does.
template <class Fn, class... Ops>
auto switch_(const Array& index, const std::vector<Fn>& branches, const Ops&... operands) {
  using R = std::invoke_result_t<const Fn&, const Ops&...>;
  detail::require_scalar("switch_", "index", index, false);
  if (branches.empty()) detail::raise<TypeError>("switch_", "branches", "", "are empty");
  const std::int64_t last = static_cast<std::int64_t>(branches.size()) - 1;
  if (auto c = detail::concrete_scalar(index)) return branches[static_cast<std::size_t>(std::clamp<std::int64_t>(*c, 0, last))](operands...);
  if (!detail::any_lane(index)) {
    std::vector<std::function<R(const Ops&...)>> erased;
    for (const Fn& b : branches) erased.push_back(b);
    return detail::staged_cond<R>(index, erased, operands...);
  }
  std::vector<R> outs;
  for (const Fn& b : branches) outs.push_back(b(operands...));
  for (std::size_t k = 1; k < outs.size(); ++k) detail::require_same_avals("switch_", "branch outputs", outs[0], outs[k]);
  Array which = minimum(maximum(index.astype(DType::i32), 0), static_cast<int>(last));
  return detail::select_trees(which, outs);
}

/// lax.while_loop: carry = body_fun(carry) while cond_fun(carry). The carry keeps its structure
/// and shapes. Under vmap with a batched predicate, lanes that stopped keep their carry while
/// the others continue. Forward-mode differentiable; reverse mode raises UnimplementedRule.
template <class CondFn, class BodyFn, class Carry>
Carry while_loop(CondFn&& cond_fun, BodyFn&& body_fun, Carry carry) {
  detail::require_not_reverse_mode(carry);
  for (;;) {
    Array p = cond_fun(static_cast<const Carry&>(carry));
    detail::require_scalar("while_loop", "cond_fun's result", p, true);
    if (auto c = detail::concrete_scalar(p)) {
      if (!*c) return carry;
      Carry next = body_fun(static_cast<const Carry&>(carry));
      detail::require_same_avals("while_loop", "carry before and after body_fun", carry, next);
      detail::require_not_reverse_mode(next);
      carry = std::move(next);
      continue;
    }
    auto any = detail::any_lane(p);
    if (!any) return detail::staged_while_loop(cond_fun, body_fun, carry);  // known only at run time
    if (!*any) return carry;
    Carry next = body_fun(static_cast<const Carry&>(carry));
    detail::require_same_avals("while_loop", "carry before and after body_fun", carry, next);
    detail::require_not_reverse_mode(next);
    carry = detail::select_trees(p, std::vector<Carry>{carry, next});
  }
}

/// What scan's f receives when there is nothing to scan over (jax's xs=None).
struct NoXs {};

namespace detail {
template <class Xs>
std::int64_t scan_length(const Xs& xs, std::int64_t length) {
  if constexpr (std::is_same_v<Xs, NoXs>) {
    if (length < 0) raise<TypeError>("scan", "length", "", "is required when there are no xs");
    return length;
  } else {
    Arrays leaves;
    append_arrays(xs, leaves);
    std::int64_t n = length;
    auto name = [&](const Array& x) {
      std::vector<std::string> names;
      append_names("xs", xs, names);
      return names.at(static_cast<std::size_t>(&x - leaves.data()));
    };
    for (const Array& x : leaves) {
      if (x.ndim() == 0) raise<ShapeError>("scan", "xs", name(x), concat("is a scalar ", to_string(x.aval()), "; leaves need a leading axis"));
      if (n < 0) n = x.shape(0);
      else if (x.shape(0) != n)
        raise<ShapeError>("scan", "xs", name(x), concat(to_string(x.aval()), " has leading axis ", x.shape(0), " but the length is ", n),
                          length >= 0 ? "the length is scan's length argument" : "the length is the first leaf's leading axis");
    }
    if (n < 0) raise<TypeError>("scan", "length", "", "is required when xs has no Array leaves");
    return n;
  }
}

/// x[i] along the leading axis (a static slice, then the axis dropped).
inline Array leading_element(const Array& x, std::int64_t i) {
  std::vector<std::int64_t> start(x.ndim(), 0), limit = x.shape().vec();
  start[0] = i;
  limit[0] = i + 1;
  auto rest = x.shape().vec();
  rest.erase(rest.begin());
  return reshape(slice(x, start, limit), Shape(rest));
}

/// Element i of every Array leaf of xs along its leading axis.
template <class Xs>
Xs scan_slice(const Xs& xs, std::int64_t i) {
  if constexpr (std::is_same_v<Xs, NoXs>) {
    return xs;
  } else {
    return tree_map(
        [&](const auto& leaf) {
          if constexpr (is_array_v<decltype(leaf)>) return leading_element(leaf, i);
          else return leaf;
        },
        xs);
  }
}

/// Leaf i of the result: leaf i of every per-step output stacked along a new leading axis.
template <class Y>
Y scan_stack(const std::vector<Y>& ys) {
  std::vector<Arrays> leaves(ys.size());
  for (std::size_t k = 0; k < ys.size(); ++k) append_arrays(ys[k], leaves[k]);
  Arrays out;
  for (std::size_t i = 0; i < leaves[0].size(); ++i) {
    Arrays steps;
    for (auto& l : leaves) steps.push_back(l[i]);
    out.push_back(stack(steps, 0));
  }
  std::size_t pos = 0;
  return with_arrays(ys[0], out, pos);
}
/// scan as a `scan` primitive: f is traced once on one step's avals.
template <class Y, class F, class Carry, class Xs>
std::pair<Carry, Y> staged_scan(F& f, const Carry& init, const Xs& xs, const Arrays& carry_leaves, const Arrays& xs_leaves,
                                std::int64_t n, bool reverse) {
  std::vector<Aval> avals = avals_of(carry_leaves);
  for (const Array& x : xs_leaves) {
    Aval a = x.aval();
    a.shape = Shape(std::vector<std::int64_t>(a.shape.begin() + 1, a.shape.end()));
    avals.push_back(a);
  }
  std::optional<Y> y_shape;
  FlatFn body = [&](const Arrays& v) {
    std::size_t pos = 0;
    Carry c = with_arrays(init, v, pos);
    auto [next, y] = [&] {
      if constexpr (std::is_same_v<Xs, NoXs>) return f(static_cast<const Carry&>(c), xs);
      else return f(static_cast<const Carry&>(c), with_arrays(xs, v, pos));
    }();
    require_same_avals("scan", "carry before and after f", c, next);
    Arrays out;
    append_arrays(next, out);
    append_arrays(y, out);
    y_shape.emplace(std::move(y));
    return out;
  };
  Arrays outs = scan_flat(body, avals, carry_leaves, xs_leaves, n, reverse);
  std::size_t pos = 0;
  Carry carry = with_arrays(init, outs, pos);
  return {std::move(carry), with_arrays(*y_shape, outs, pos)};
}

/// while_loop as a `while` primitive, for a predicate known only at run time.
template <class CondFn, class BodyFn, class Carry>
Carry staged_while_loop(CondFn& cond_fun, BodyFn& body_fun, const Carry& carry) {
  Arrays leaves;
  append_arrays(carry, leaves);
  FlatFn cond = [&](const Arrays& v) {
    std::size_t pos = 0;
    Array p = cond_fun(with_arrays(carry, v, pos));
    require_scalar("while_loop", "cond_fun's result", p, true);
    return Arrays{p};
  };
  FlatFn body = [&](const Arrays& v) {
    std::size_t pos = 0;
    Carry c = with_arrays(carry, v, pos);
    Carry next = body_fun(static_cast<const Carry&>(c));
    require_same_avals("while_loop", "carry before and after body_fun", c, next);
    Arrays out;
    append_arrays(next, out);
    return out;
  };
  Arrays outs = while_flat(cond, body, leaves);
  std::size_t pos = 0;
  return with_arrays(carry, outs, pos);
}

}  // namespace detail

/// lax.scan: for each i (from the end when `reverse`), (carry, y_i) = f(carry, xs[i]); returns
/// (final carry, ys stacked along a new leading axis). f returns std::pair{carry, y}; xs is any
/// pytree whose Array leaves share their leading length, or NoXs{} with `length` given.
/// With zero steps there is no y to stack and scan raises (jax infers ys's shape by tracing).
template <class F, class Carry, class Xs>
auto scan(F&& f, Carry init, const Xs& xs, std::int64_t length = -1, bool reverse = false) {
  using Step = std::invoke_result_t<F&, const Carry&, const Xs&>;
  using Y = typename Step::second_type;
  const std::int64_t n = detail::scan_length(xs, length);
  if (n == 0) detail::raise<ShapeError>("scan", "length", "", "is 0: there is no step output to stack");
  Arrays carry_leaves, xs_leaves;
  detail::append_arrays(init, carry_leaves);
  if constexpr (!std::is_same_v<Xs, NoXs>) detail::append_arrays(xs, xs_leaves);
  Arrays all = carry_leaves;
  all.insert(all.end(), xs_leaves.begin(), xs_leaves.end());
  if (detail::staged_control_flow(all)) return detail::staged_scan<Y>(f, init, xs, carry_leaves, xs_leaves, n, reverse);
  std::vector<std::optional<Y>> ys(static_cast<std::size_t>(n));
  Carry carry = std::move(init);
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t i = reverse ? n - 1 - k : k;
    auto [next, y] = f(static_cast<const Carry&>(carry), detail::scan_slice(xs, i));
    detail::require_same_avals("scan", "carry before and after f", carry, next);
    carry = std::move(next);
    ys[static_cast<std::size_t>(i)].emplace(std::move(y));
  }
  std::vector<Y> steps;
  for (auto& y : ys) steps.push_back(std::move(*y));
  return std::make_pair(std::move(carry), detail::scan_stack(steps));
}

/// lax.fori_loop with a static trip count: carry = body(i, carry) for i in [lower, upper); i is
/// an i32 scalar Array. Differentiable in both modes (it is a scan in jax).
template <class BodyFn, class Carry>
Carry fori_loop(std::int64_t lower, std::int64_t upper, BodyFn&& body, Carry carry) {
  Arrays leaves;
  detail::append_arrays(carry, leaves);
  if (upper > lower && detail::staged_control_flow(leaves)) {  // one scan over (i, carry)
    auto step = [&](const std::pair<Array, Carry>& c, const NoXs&) {
      Carry next = body(c.first, c.second);
      return std::make_pair(std::make_pair(c.first + 1, std::move(next)), std::tuple<>{});
    };
    auto init = std::make_pair(scalar(static_cast<std::int32_t>(lower)), std::move(carry));
    return scan(step, std::move(init), NoXs{}, upper - lower).first.second;
  }
  for (std::int64_t i = lower; i < upper; ++i) {
    Carry next = body(scalar(static_cast<std::int32_t>(i)), static_cast<const Carry&>(carry));
    detail::require_same_avals("fori_loop", "carry before and after body", carry, next);
    carry = std::move(next);
  }
  return carry;
}

}  // namespace canopy
