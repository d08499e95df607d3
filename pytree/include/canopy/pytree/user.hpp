// User classes registered through canopy::pytree_node<T> (the C++ register_pytree_node):
// the class is traversed as the pytree its `children` returns, and rebuilt by `from_children`.
#pragma once

#include "canopy/pytree/detail/type_name.hpp"
#include "canopy/pytree/key_path.hpp"
#include "canopy/pytree/traits.hpp"

namespace canopy::detail {

/// std::tie(...) gives a tuple of references; rebuilding needs the values.
template <class C>
struct decayed {
  using type = C;
};
template <class... E>
struct decayed<std::tuple<E...>> {
  using type = std::tuple<std::remove_cvref_t<E>...>;
};
template <class A, class B>
struct decayed<std::pair<A, B>> {
  using type = std::pair<std::remove_cvref_t<A>, std::remove_cvref_t<B>>;
};

template <class T>
struct node_impl<T, NodeKind::user> {
  using Reg = pytree_node<T>;
  using Ch = std::remove_cvref_t<decltype(Reg::children(std::declval<const T&>()))>;
  using ChV = typename decayed<Ch>::type;
  static_assert(kind_of<ChV, NoLeafIf>() != NodeKind::leaf && kind_of<ChV, NoLeafIf>() != NodeKind::none,
                "canopy: pytree_node<T>::children must return a pytree node (std::tie(...), a tuple, a vector, ...)");
  using Inner = node_impl<ChV>;
  using child_types = typename Inner::child_types;
  static constexpr bool dynamic = Inner::dynamic;
  static constexpr std::string_view open = "(", close = ")";
  static const std::string& label() { return type_name<T>(); }

  static constexpr KeyRef rename(KeyRef k) {
    if constexpr (requires { Reg::names; }) {
      if (k.kind == KeyRef::Kind::index && std::size_t(k.id) < std::size(Reg::names)) return KeyRef::field(Reg::names[k.id]);
    }
    return k;
  }
  template <class V, class F>
  static void children(V& v, F&& f) {
    auto&& ch = Reg::children(v);
    node_impl<Ch>::children(ch, [&](const KeyRef& k, auto& c) { f(rename(k), c); });
  }
  static void write_aux(const T& v, AuxWriter& w) { node_impl<Ch>::write_aux(Reg::children(v), w); }
  template <class G>
  static void walk_aux(AuxReader& r, G&& g) {
    Inner::walk_aux(r, [&]<class C>(const KeyRef& k) { g.template operator()<C>(rename(k)); });
  }
  template <class G>
  static T build(AuxReader& r, G&& g) {
    return Reg::from_children(Inner::build(r, [&]<class C>(const KeyRef& k) -> C { return g.template operator()<C>(rename(k)); }));
  }
  template <class Ctx, class G, class... R>
  CANOPY_INLINE static auto map(const Ctx& ctx, const PathLink* link, G&& g, const T& v, const R&... rest) {
    static_assert((user_node<R> && ...),
                  "canopy: every tree passed to tree_map must have the first tree's node types (a registered class here)");
    auto mapped = node_impl<Ch>::map(
        ctx, link, [&](const KeyRef& k, const auto&... c) { return g(rename(k), c...); }, Reg::children(v),
        pytree_node<R>::children(rest)...);
    static_assert(requires { Reg::from_children(std::move(mapped)); },
                  "canopy: tree_map changed leaf types but pytree_node<T>::from_children cannot take them; "
                  "make from_children a template");
    return Reg::from_children(std::move(mapped));
  }
};

}  // namespace canopy::detail
