// tree_flatten / tree_unflatten / tree_leaves / tree_structure and their with-path forms.
#pragma once

#include <utility>
#include <variant>
#include <vector>

#include "canopy/pytree/treedef.hpp"

namespace canopy {
namespace detail {

template <class L>
struct leaf_type_of {
  using type = std::monostate;  // a type with no leaves at all
};
template <class L>
struct leaf_type_of<type_list<L>> {
  using type = L;
};
template <class L1, class L2, class... L>
struct leaf_type_of<type_list<L1, L2, L...>> {
  using type = std::variant<L1, L2, L...>;
};

/// Stores a leaf as L, naming the variant alternative exactly when L is a variant.
template <class L, class X>
L make_leaf(X&& x) {
  using XV = std::remove_cvref_t<X>;
  if constexpr (!std::is_same_v<L, XV> && is_instance<L, std::variant>) return L(std::in_place_type<XV>, std::forward<X>(x));
  else return L(std::forward<X>(x));
}

template <class Tree, class P>
constexpr void require_pytree() {
  static_assert(is_leaf_if_option<P>, "canopy: the last argument must be an is_leaf option made by canopy::leaf_if");
  check_pytree<Tree, P>();
}

/// Converts one stored leaf into the leaf type C a rebuilt tree needs, moving when allowed.
template <class C, class X>
C take_leaf(X&& x, std::string_view api, std::size_t index, const PathLink* link) {
  using XV = std::remove_cvref_t<X>;
  if constexpr (std::is_same_v<XV, C>) {
    return std::forward<X>(x);
  } else if constexpr (is_instance<XV, std::variant>) {
    if (auto* p = std::get_if<C>(&x)) {
      if constexpr (std::is_rvalue_reference_v<X&&> && !std::is_const_v<std::remove_reference_t<X>>) return C(std::move(*p));
      else return C(*p);
    }
    throw TreeError(std::string(api) + ": leaf " + std::to_string(index) + " (" + where(link) + ") holds alternative " +
                    std::to_string(x.index()) + " of the leaf variant, not " + type_name<C>());
  } else if constexpr (std::is_constructible_v<C, X>) {
    return C(std::forward<X>(x));
  } else {
    static_assert(dependent_false<C>::value, "canopy: tree_unflatten: the leaves cannot be converted to this tree's leaf type");
  }
}

template <class Leaves, bool Move>
struct LeafSource {
  Leaves& leaves;
  std::string_view api;
  std::size_t next = 0;
  template <class C>
  C take(const PathLink* link) {
    std::size_t i = next++;
    if constexpr (Move) return take_leaf<C>(std::move(leaves[i]), api, i, link);
    else return take_leaf<C>(leaves[i], api, i, link);
  }
};

}  // namespace detail

/// The leaf type of a tree of type T: the one leaf type, or a std::variant of the distinct ones.
template <class T, class P = NoLeafIf>
using leaf_t = typename detail::leaf_type_of<decltype(detail::leaf_types<std::remove_cvref_t<T>, P>(detail::type_list<>{}))>::type;

/// Leaves in order plus the structure. Pass an rvalue to move the leaves out instead of copying them.
template <class Tree, class P = NoLeafIf>
auto tree_flatten(Tree&& tree, P = {}) {
  using T = std::remove_cvref_t<Tree>;
  detail::require_pytree<T, P>();
  using L = leaf_t<T, P>;
  constexpr std::size_t fixed = detail::static_leaf_count<T, P>();
  std::vector<L> leaves;
  if constexpr (fixed != detail::dynamic_count) leaves.reserve(fixed);
  std::vector<std::uint64_t> aux;
  detail::AuxWriter w(aux);
  constexpr bool move = !std::is_lvalue_reference_v<Tree> && !std::is_const_v<std::remove_reference_t<Tree>>;
  auto push = [&](auto& leaf, const detail::PathLink*) {
    if constexpr (move) leaves.push_back(detail::make_leaf<L>(std::move(leaf)));
    else leaves.push_back(detail::make_leaf<L>(leaf));
  };
  std::remove_reference_t<Tree>& ref = tree;
  detail::flatten_walk<P>(ref, w, push, nullptr);
  std::size_t n = leaves.size();
  return std::pair<std::vector<L>, TreeDef>(std::move(leaves), TreeDef(&detail::type_ops<T, P>, std::move(aux), n));
}

/// The leaves of a tree, in order (copies; std::move the tree to move them).
template <class Tree, class P = NoLeafIf>
auto tree_leaves(Tree&& tree, P opt = {}) {
  return tree_flatten(std::forward<Tree>(tree), opt).first;
}

/// The structure of a tree, without copying its leaves.
template <class T, class P = NoLeafIf>
TreeDef tree_structure(const T& tree, P = {}) {
  detail::require_pytree<T, P>();
  std::vector<std::uint64_t> aux;
  detail::AuxWriter w(aux);
  std::size_t n = 0;
  auto count = [&](const auto&, const detail::PathLink*) { ++n; };
  detail::flatten_walk<P>(tree, w, count, nullptr);
  return TreeDef(&detail::type_ops<T, P>, std::move(aux), n);
}

/// (key path, leaf) pairs in order, plus the structure.
template <class T, class P = NoLeafIf>
auto tree_flatten_with_path(const T& tree, P = {}) {
  detail::require_pytree<T, P>();
  using L = leaf_t<T, P>;
  std::vector<std::pair<KeyPath, L>> out;
  std::vector<std::uint64_t> aux;
  detail::AuxWriter w(aux);
  auto push = [&](const auto& leaf, const detail::PathLink* link) { out.emplace_back(detail::to_path(link), detail::make_leaf<L>(leaf)); };
  detail::flatten_walk<P>(tree, w, push, nullptr);
  std::size_t n = out.size();
  return std::pair<std::vector<std::pair<KeyPath, L>>, TreeDef>(std::move(out), TreeDef(&detail::type_ops<T, P>, std::move(aux), n));
}

/// (key path, leaf) pairs in order.
template <class T, class P = NoLeafIf>
auto tree_leaves_with_path(const T& tree, P opt = {}) {
  return tree_flatten_with_path(tree, opt).first;
}

/// Rebuilds a T from a structure taken from a T and leaves in order (moved from if `leaves` is an rvalue).
template <class T, class Leaves, class P = NoLeafIf>
T tree_unflatten(const TreeDef& def, Leaves&& leaves, P = {}) {
  detail::require_pytree<T, P>();
  if (!def.describes<T, P>())
    throw TreeError("tree_unflatten: treedef is for " + def.type_name() + ", not " + detail::type_name<T>());
  if (std::size(leaves) != def.num_leaves()) {
    std::string msg = "tree_unflatten: treedef expects " + std::to_string(def.num_leaves()) + " leaves, got " +
                      std::to_string(std::size(leaves));
    if (std::size(leaves) < def.num_leaves()) msg += " (first missing: " + keystr(def.leaf_paths()[std::size(leaves)]) + ")";
    throw TreeError(msg);
  }
  detail::AuxReader r = def.reader();
  constexpr bool move = !std::is_lvalue_reference_v<Leaves>;
  std::remove_reference_t<Leaves>& ref = leaves;
  detail::LeafSource<std::remove_reference_t<Leaves>, move> src{ref, "tree_unflatten"};
  T out = detail::build_tree<T, P>(r, src, nullptr);
  if (!r.done()) throw TreeError("tree_unflatten: treedef holds more structure than a " + detail::type_name<T>() + " uses");
  return out;
}

}  // namespace canopy
