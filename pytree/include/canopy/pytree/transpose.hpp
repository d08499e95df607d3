// tree_transpose: a tree of structure outer(inner(leaves)) becomes one of inner(outer(leaves)),
// e.g. a std::vector of Params into a Params of std::vectors.
#pragma once

#include "canopy/pytree/flatten.hpp"

namespace canopy {
namespace detail {

template <class L, class P>
struct TransposeIn {
  std::vector<KeyPath> outer_paths;
  const TreeDef& inner;
  std::size_t next = 0;
  std::vector<L> leaves;  // outer-major
};

template <class P, class L, class T>
void transpose_collect(TransposeIn<L, P>& c, const T& t, const PathLink* link) {
  if (c.next < c.outer_paths.size() && to_path(link) == c.outer_paths[c.next]) {
    TreeDef def = tree_structure(t, P{});
    if (def.aux().size() != c.inner.aux().size() || !std::equal(def.aux().begin(), def.aux().end(), c.inner.aux().begin()) ||
        def.num_leaves() != c.inner.num_leaves())
      throw TreeError("tree_transpose: the subtree at " + where(link) + " is " + def.to_string() + ", but inner is " +
                      c.inner.to_string());
    auto push = [&](const auto& leaf, const PathLink*) { c.leaves.push_back(make_leaf<L>(leaf)); };
    for_each_leaf<P>(t, push, link);
    ++c.next;
    return;
  }
  if constexpr (leaf_v<T, P>) {
    throw TreeError("tree_transpose: the tree has a leaf at " + where(link) + " where outer has none");
  } else {
    node_impl<T>::children(t, [&](const KeyRef& k, const auto& child) {
      const PathLink l{link, k};
      transpose_collect<P>(c, child, &l);
    });
  }
}

template <class L>
struct TransposeOut {
  std::vector<KeyPath> inner_paths;
  const TreeDef& outer;
  std::vector<L>& leaves;  // outer-major: leaves[i * n_inner + j]
  std::size_t n_inner;
  std::size_t next_inner = 0;
  std::size_t next_outer = 0;
  template <class C>
  C take(const PathLink* link) {
    std::size_t i = next_outer++;
    return take_leaf<C>(std::move(leaves[i * n_inner + next_inner]), "tree_transpose", i, link);
  }
};

template <class T, class P, class L>
T transpose_build(TransposeOut<L>& c, AuxReader& inner_r, const PathLink* link) {
  if (c.next_inner < c.inner_paths.size() && to_path(link) == c.inner_paths[c.next_inner]) {
    AuxReader r = c.outer.reader();
    c.next_outer = 0;
    T out = build_tree<T, P>(r, c, link);
    if (!r.done() || c.next_outer != c.outer.num_leaves())
      throw TreeError("tree_transpose: the result type's subtree at " + where(link) + " is not outer " + c.outer.to_string());
    ++c.next_inner;
    return out;
  }
  if constexpr (leaf_v<T, P>) {
    throw TreeError("tree_transpose: the result type has a leaf at " + where(link) + " where inner has none");
  } else {
    return node_impl<T>::build(inner_r, [&]<class C>(const KeyRef& k) -> C {
      const PathLink l{link, k};
      return transpose_build<C, P>(c, inner_r, &l);
    });
  }
}

}  // namespace detail

/// JAX's tree_transpose. `tree` has structure outer∘inner; the result, of the caller's type Out,
/// has structure inner∘outer. Structures are matched by key path and recorded lengths/keys, so
/// outer and inner may come from trees of any leaf type (`tree_structure(std::vector<int>(3))`).
template <class Out, class Tree, class P = NoLeafIf>
Out tree_transpose(const TreeDef& outer, const TreeDef& inner, const Tree& tree, P = {}) {
  detail::require_pytree<Tree, P>();
  detail::require_pytree<Out, P>();
  using L = leaf_t<Tree, P>;
  detail::TransposeIn<L, P> in{outer.leaf_paths(), inner, 0, {}};
  in.leaves.reserve(outer.num_leaves() * inner.num_leaves());
  detail::transpose_collect<P>(in, tree, nullptr);
  if (in.next != in.outer_paths.size())
    throw TreeError("tree_transpose: the tree has " + std::to_string(in.next) + " inner subtrees, outer " +
                    outer.to_string() + " has " + std::to_string(outer.num_leaves()) + " leaves");
  detail::TransposeOut<L> out{inner.leaf_paths(), outer, in.leaves, inner.num_leaves()};
  detail::AuxReader r = inner.reader();
  Out result = detail::transpose_build<Out, P>(out, r, nullptr);
  if (!r.done() || out.next_inner != inner.num_leaves())
    throw TreeError("tree_transpose: the result type " + detail::type_name<Out>() + " does not have inner structure " +
                    inner.to_string());
  return result;
}

}  // namespace canopy
