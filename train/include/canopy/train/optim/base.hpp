// optax's core in C++: a gradient transformation is a value with `init(params) -> state` and
// `update(updates, state, params) -> {updates, state}` over pytrees; `chain` composes them and
// `apply_updates` adds the result to the parameters. States are pytrees (structs and tuples of
// Arrays), so they jit, vmap and checkpoint with the parameters.
#pragma once

#include <cstdint>
#include <limits>
#include <tuple>
#include <type_traits>
#include <utility>

#include <canopy/array.hpp>
#include <canopy/array_pytree.hpp>
#include <canopy/numpy.hpp>
#include <canopy/ops.hpp>
#include <canopy/pytree.hpp>
#include <canopy/transforms/tree_arrays.hpp>

namespace canopy::optim {

namespace detail {

using canopy::detail::is_array_v;

/// `tree` with f applied to each Array leaf (and the matching leaves of `rest`); leaves that are
/// not Arrays (a model's config ints, flags) are kept from `tree`.
template <class F, class T, class... R>
T map_arrays(F&& f, const T& tree, const R&... rest) {
  return tree_map(
      [&](const auto& x, const auto&... xs) {
        if constexpr (is_array_v<decltype(x)>) return Array(f(x, xs...));
        else return x;
      },
      tree, rest...);
}

/// The sum over Array leaves of f(leaf) (a scalar Array); 0 for a tree without Arrays.
template <class F, class T>
Array sum_arrays(F&& f, const T& tree) {
  Arrays leaves;
  canopy::detail::append_arrays(tree, leaves);
  Array total = scalar(0.0f);
  for (const Array& x : leaves) total = total + f(x);
  return total;
}

/// optax's safe_increment: count + 1, saturating at the int32 maximum instead of wrapping.
inline Array safe_increment(const Array& count) {
  constexpr std::int32_t max = std::numeric_limits<std::int32_t>::max();
  return where(count < max, count + 1, scalar(max));
}

/// A fresh int32 step counter (0-d), as optax's states hold.
inline Array zero_count() { return scalar(std::int32_t{0}); }

}  // namespace detail

/// The state of a transformation that keeps none (optax's EmptyState): a pytree without leaves.
struct EmptyState {};

/// Passes updates through unchanged (optax.identity).
struct Identity {
  template <class P>
  EmptyState init(const P&) const {
    return {};
  }
  template <class P>
  std::pair<P, EmptyState> update(const P& updates, const EmptyState& state, const P&) const {
    return {updates, state};
  }
};
inline Identity identity() { return {}; }

/// Runs transformations in order, each on the previous one's updates (optax.chain). The state is
/// a std::tuple of the inner states, in the same order.
template <class... Tx>
struct Chain {
  std::tuple<Tx...> transforms;

  template <class P>
  auto init(const P& params) const {
    return std::apply([&](const auto&... tx) { return std::tuple{tx.init(params)...}; }, transforms);
  }
  template <class P, class S>
  std::pair<P, S> update(const P& updates, const S& state, const P& params) const {
    static_assert(std::tuple_size_v<S> == sizeof...(Tx), "optim::chain: the state holds one entry per transformation");
    P current = updates;
    S next = state;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((std::tie(current, std::get<I>(next)) = std::get<I>(transforms).update(current, std::get<I>(state), params)), ...);
    }(std::index_sequence_for<Tx...>{});
    return {std::move(current), std::move(next)};
  }
};
template <class... Tx>
Chain<std::remove_cvref_t<Tx>...> chain(Tx&&... tx) {
  return {std::tuple<std::remove_cvref_t<Tx>...>{std::forward<Tx>(tx)...}};
}

/// params + updates, leaf by leaf, cast back to each parameter's dtype (optax.apply_updates).
template <class P>
P apply_updates(const P& params, const P& updates) {
  return detail::map_arrays([](const Array& p, const Array& u) { return (p + u).astype(p.dtype()); }, params, updates);
}

/// The square root of the sum of squares of every Array leaf (optax.global_norm).
template <class P>
Array global_norm(const P& tree) {
  return sqrt(detail::sum_arrays([](const Array& x) { return sum(x * x); }, tree));
}

}  // namespace canopy::optim
