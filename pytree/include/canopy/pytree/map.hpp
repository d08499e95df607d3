// tree_map (n-ary, leaf types may change), tree_map_with_path, tree_reduce, tree_all, tree_any.
#pragma once

#include <optional>
#include <tuple>
#include <utility>

#include "canopy/pytree/flatten.hpp"

namespace canopy {
namespace detail {

template <class P, class F, class T, class... R>
CANOPY_INLINE auto tree_map_impl(std::string_view api, F& f, const T& tree, const R&... rest) {
  require_pytree<T, P>();
  auto leaf = [&](const PathLink*, const auto& x, const auto&... xs) CANOPY_INLINE_LAMBDA { return as_leaf_value(f(x, xs...)); };
  return map_tree<P>(MapCtx{api}, nullptr, leaf, tree, rest...);
}
template <class P, class F, class T, class... R>
auto tree_map_with_path_impl(F& f, const T& tree, const R&... rest) {
  require_pytree<T, P>();
  auto leaf = [&](const PathLink* link, const auto& x, const auto&... xs) { return as_leaf_value(f(to_path(link), x, xs...)); };
  return map_tree<P>(MapCtx{"tree_map_with_path"}, nullptr, leaf, tree, rest...);
}

template <class... A>
constexpr bool ends_with_option() {
  if constexpr (sizeof...(A) == 0) return false;
  else return is_leaf_if_option<std::remove_cvref_t<std::tuple_element_t<sizeof...(A) - 1, std::tuple<A...>>>>;
}

/// Calls run.template operator()<P>(args-without-option...) with P taken from a trailing leaf_if option.
template <class Run, class... A>
CANOPY_INLINE decltype(auto) with_option(Run&& run, const A&... args) {
  if constexpr (ends_with_option<A...>()) {
    using P = std::remove_cvref_t<std::tuple_element_t<sizeof...(A) - 1, std::tuple<A...>>>;
    auto refs = std::forward_as_tuple(args...);
    return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
      return run.template operator()<P>(std::get<I>(refs)...);
    }(std::make_index_sequence<sizeof...(A) - 1>{});
  } else {
    return run.template operator()<NoLeafIf>(args...);
  }
}

}  // namespace detail

/// Applies f to every leaf of `tree` (and the matching leaves or subtrees of `rest`), returning a
/// tree of the same structure; the leaf type may change where the container allows it
/// (`std::vector<float>` to `std::vector<int>`, `Params<Array>` to `Params<int>`).
/// A trailing `leaf_if(...)` option stops descent at the types it accepts.
template <class F, class Tree, class... Rest>
CANOPY_INLINE auto tree_map(F&& f, const Tree& tree, const Rest&... rest) {
  return detail::with_option(
      [&]<class P>(const auto&... trees) CANOPY_INLINE_LAMBDA { return detail::tree_map_impl<P>("tree_map", f, trees...); }, tree, rest...);
}

/// tree_map whose f also receives each leaf's KeyPath first: f(path, leaf, rest_leaves...).
template <class F, class Tree, class... Rest>
auto tree_map_with_path(F&& f, const Tree& tree, const Rest&... rest) {
  return detail::with_option(
      [&]<class P>(const auto&... trees) { return detail::tree_map_with_path_impl<P>(f, trees...); }, tree, rest...);
}

/// Folds the leaves left to right: f(f(f(init, l0), l1), ...).
template <class F, class Tree, class Init, class P = NoLeafIf>
  requires(!detail::is_leaf_if_option<Init>)
auto tree_reduce(F&& f, const Tree& tree, Init init, P = {}) {
  detail::require_pytree<Tree, P>();
  auto step = [&](const auto& leaf, const detail::PathLink*) { init = f(std::move(init), leaf); };
  detail::for_each_leaf<P>(tree, step, nullptr);
  return init;
}

/// Folds the leaves left to right starting from the first; throws TreeError on a tree without leaves.
template <class F, class Tree, class P = NoLeafIf>
  requires detail::is_leaf_if_option<P>
auto tree_reduce(F&& f, const Tree& tree, P = {}) {
  detail::require_pytree<Tree, P>();
  using L = leaf_t<Tree, P>;
  std::optional<L> acc;
  auto step = [&](const auto& leaf, const detail::PathLink*) {
    if (acc) acc = f(std::move(*acc), leaf);
    else acc.emplace(leaf);
  };
  detail::for_each_leaf<P>(tree, step, nullptr);
  if (!acc) throw TreeError("tree_reduce: the tree has no leaves and no initial value was given");
  return *std::move(acc);
}

/// True when every leaf converts to true (and for a tree without leaves).
template <class Tree, class P = NoLeafIf>
bool tree_all(const Tree& tree, P = {}) {
  detail::require_pytree<Tree, P>();
  bool all = true;
  auto step = [&](const auto& leaf, const detail::PathLink*) { all = all && static_cast<bool>(leaf); };
  detail::for_each_leaf<P>(tree, step, nullptr);
  return all;
}

/// True when some leaf converts to true.
template <class Tree, class P = NoLeafIf>
bool tree_any(const Tree& tree, P = {}) {
  detail::require_pytree<Tree, P>();
  bool any = false;
  auto step = [&](const auto& leaf, const detail::PathLink*) { any = any || static_cast<bool>(leaf); };
  detail::for_each_leaf<P>(tree, step, nullptr);
  return any;
}

}  // namespace canopy
