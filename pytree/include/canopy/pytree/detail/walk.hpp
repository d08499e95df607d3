// The recursions every pytree algorithm is built from: compile-time walks over types and
// run-time walks over values, dispatching on node_impl<T> at each level.
#pragma once

#include <string>
#include <string_view>

#include "canopy/error.hpp"
#include "canopy/pytree/detail/aux.hpp"
#include "canopy/pytree/key_path.hpp"
#include "canopy/pytree/traits.hpp"

namespace canopy::detail {

/// Types that are neither leaves nor nodes stop here with one readable message.
template <class T>
struct node_impl<T, NodeKind::none> {
  static_assert(dependent_false<T>::value,
                "canopy: T is neither a leaf nor a pytree node; make it an aggregate, use BOOST_HANA_DEFINE_STRUCT, "
                "or specialise canopy::pytree_node<T>");
  using child_types = type_list<>;
  static constexpr bool dynamic = false;
  static constexpr std::string_view open = "", close = "";
  template <class V, class F>
  static void children(V&, F&&) {}
  static void write_aux(const T&, AuxWriter&) {}
  template <class G>
  static void walk_aux(AuxReader&, G&&) {}
  template <class G>
  [[noreturn]] static T build(AuxReader&, G&&) {
    throw Error("unreachable");
  }
  template <class Ctx, class G, class... R>
  static T map(const Ctx&, const PathLink*, G&&, const T& v, const R&...) {
    return v;
  }
};

// ---- compile-time walks (Seen stops the recursion of recursive types) ----

template <class T, class... L>
constexpr bool contains(type_list<L...>) {
  return (std::is_same_v<T, L> || ...);
}
template <class... A>
constexpr auto merge(type_list<A...> a, type_list<>) {
  return a;
}
template <class... A, class B, class... Bs>
constexpr auto merge(type_list<A...> a, type_list<B, Bs...>) {
  if constexpr (contains<B>(a)) return merge(a, type_list<Bs...>{});
  else return merge(type_list<A..., B>{}, type_list<Bs...>{});
}

template <class A>
constexpr auto merge_all(A a) {
  return a;
}
template <class A, class B, class... Rest>
constexpr auto merge_all(A a, B b, Rest... rest) {
  return merge_all(merge(a, b), rest...);
}

/// The distinct leaf types reachable from T, in first-seen order.
template <class T, class P, class... Seen>
constexpr auto leaf_types(type_list<Seen...> seen) {
  if constexpr (leaf_v<T, P>) return type_list<T>{};
  else if constexpr (contains<T>(seen) || kind_of<T, P>() == NodeKind::none) return type_list<>{};
  else {
    return []<class... C>(type_list<C...>) {
      return merge_all(type_list<>{}, leaf_types<C, P>(type_list<Seen..., T>{})...);
    }(typename node_impl<T>::child_types{});
  }
}

constexpr auto first_non_void() {
  return std::type_identity<void>{};
}
template <class A, class... Rest>
constexpr auto first_non_void(std::type_identity<A> a, Rest... rest) {
  if constexpr (!std::is_void_v<A>) return a;
  else return first_non_void(rest...);
}

/// The first type reached from T that is neither a leaf nor a node, or void.
template <class T, class P, class... Seen>
constexpr auto first_invalid(type_list<Seen...> seen) {
  if constexpr (leaf_v<T, P> || contains<T>(seen)) return std::type_identity<void>{};
  else if constexpr (kind_of<T, P>() == NodeKind::none) return std::type_identity<T>{};
  else {
    return []<class... C>(type_list<C...>) {
      return first_non_void(first_invalid<C, P>(type_list<Seen..., T>{})...);
    }(typename node_impl<T>::child_types{});
  }
}

/// Checks that every type reachable from T is a leaf or a node; the static_assert of
/// node_impl<Bad, none> names the offending type.
template <class T, class P>
constexpr bool check_pytree() {
  using Bad = typename decltype(first_invalid<T, P>(type_list<>{}))::type;
  if constexpr (!std::is_void_v<Bad>) {
    (void)sizeof(node_impl<Bad, NodeKind::none>);
    return false;
  }
  return true;
}

inline constexpr std::size_t dynamic_count = std::size_t(-1);

/// Number of leaves when the type alone decides it, else dynamic_count.
template <class T, class P, class... Seen>
constexpr std::size_t static_leaf_count(type_list<Seen...> seen = {}) {
  if constexpr (leaf_v<T, P>) return 1;
  else if constexpr (contains<T>(seen) || kind_of<T, P>() == NodeKind::none || node_impl<T>::dynamic) return dynamic_count;
  else {
    return []<class... C>(type_list<C...>) {
      std::size_t n = 0;
      bool dyn = false;
      ((static_leaf_count<C, P>(type_list<Seen..., T>{}) == dynamic_count ? void(dyn = true)
                                                                          : void(n += static_leaf_count<C, P>(type_list<Seen..., T>{}))),
       ...);
      return dyn ? dynamic_count : n;
    }(typename node_impl<T>::child_types{});
  }
}

// ---- run-time walks ----

/// Calls f(leaf, link) for every leaf in order; V may be const.
template <class P, class V, class F>
void for_each_leaf(V& t, F& f, const PathLink* link) {
  using T = std::remove_const_t<V>;
  if constexpr (leaf_v<T, P>) {
    f(t, link);
  } else {
    node_impl<T>::children(t, [&](const KeyRef& k, auto& c) {
      const PathLink l{link, k};
      for_each_leaf<P>(c, f, &l);
    });
  }
}

/// for_each_leaf that also records the treedef's aux words (pre-order).
template <class P, class V, class F>
void flatten_walk(V& t, AuxWriter& w, F& f, const PathLink* link) {
  using T = std::remove_const_t<V>;
  if constexpr (leaf_v<T, P>) {
    f(t, link);
  } else {
    if constexpr (node_impl<T>::dynamic) node_impl<T>::write_aux(t, w);
    node_impl<T>::children(t, [&](const KeyRef& k, auto& c) {
      const PathLink l{link, k};
      flatten_walk<P>(c, w, f, &l);
    });
  }
}

/// Rebuilds a T from aux words and a leaf source (src.template take<C>(link)).
template <class T, class P, class Src>
T build_tree(AuxReader& r, Src& src, const PathLink* link) {
  if constexpr (leaf_v<T, P>) {
    return src.template take<T>(link);
  } else {
    return node_impl<T>::build(r, [&]<class C>(const KeyRef& k) -> C {
      const PathLink l{link, k};
      return build_tree<C, P>(r, src, &l);
    });
  }
}

/// Walks T's structure from aux words alone: vis.leaf(link), vis.open<Impl>(), vis.child(key), vis.close<Impl>().
template <class T, class P, class Vis>
void structure_walk(AuxReader& r, Vis& vis, const PathLink* link) {
  if constexpr (leaf_v<T, P>) {
    vis.leaf(link);
  } else {
    using Impl = node_impl<T>;
    vis.template open<Impl>();
    Impl::walk_aux(r, [&]<class C>(const KeyRef& k) {
      const PathLink l{link, k};
      vis.child(k);
      structure_walk<C, P>(r, vis, &l);
    });
    vis.template close<Impl>();
  }
}

/// What tree_map needs to report a mismatch: its name.
struct MapCtx {
  std::string_view api;
  [[noreturn]] void mismatch(const PathLink* link, const std::string& what) const {
    std::string msg(api);
    msg.append(": structure mismatch at ").append(where(link)).append(": ").append(what);
    throw TreeError(msg);
  }
};

/// tree_map's recursion: f(link, leaf, rest_leaves_or_subtrees...) at the first tree's leaves.
template <class P, class F, class T, class... R>
CANOPY_INLINE auto map_tree(const MapCtx& ctx, const PathLink* link, F& f, const T& t, const R&... rest) {
  if constexpr (leaf_v<T, P>) {
    return f(link, t, rest...);
  } else {
    return node_impl<T>::map(
        ctx, link,
        [&](const KeyRef& k, const auto& c, const auto&... rc) CANOPY_INLINE_LAMBDA {
          const PathLink l{link, k};
          return map_tree<P>(ctx, &l, f, c, rc...);
        },
        t, rest...);
  }
}

}  // namespace canopy::detail
