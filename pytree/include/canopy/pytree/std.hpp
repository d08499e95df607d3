// Standard containers as pytree nodes: vector, array, tuple/pair, map/unordered_map (children
// in sorted key order, as JAX orders dicts), optional (empty = no children) and variant.
#pragma once

#include <algorithm>
#include <string_view>

#include "canopy/pytree/detail/aux.hpp"
#include "canopy/pytree/key_path.hpp"
#include "canopy/pytree/traits.hpp"

namespace canopy::detail {

template <class Ctx, class R>
void expect_length(const Ctx& ctx, const PathLink* link, std::size_t n, const R& rest) {  // NOLINT
  if (rest.size() != n)
    ctx.mismatch(link, "a sequence of length " + std::to_string(n) + " vs one of length " + std::to_string(rest.size()));
}

template <class E, class A>
struct node_impl<std::vector<E, A>, NodeKind::vector> {
  using T = std::vector<E, A>;
  using child_types = type_list<E>;
  static constexpr bool dynamic = true;
  static constexpr std::string_view open = "[", close = "]";

  template <class V, class F>
  static void children(V& v, F&& f) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<E, bool>) {  // std::vector<bool> hands out proxies, not references
        const bool b = v[i];
        f(KeyRef::index(i), b);
      } else {
        f(KeyRef::index(i), v[i]);
      }
    }
  }
  static void write_aux(const T& v, AuxWriter& w) { w.word(v.size()); }
  template <class G>
  static void walk_aux(AuxReader& r, G&& g) {
    for (std::size_t i = 0, n = r.word(); i < n; ++i) g.template operator()<E>(KeyRef::index(i));
  }
  template <class G>
  static T build(AuxReader& r, G&& g) {
    T out;
    std::size_t n = r.word();
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) out.push_back(g.template operator()<E>(KeyRef::index(i)));
    return out;
  }
  template <class Ctx, class G, class... R>
  CANOPY_INLINE static auto map([[maybe_unused]] const Ctx& ctx, [[maybe_unused]] const PathLink* link, G&& g, const T& v,
                  const R&... rest) {
    static_assert((is_instance<R, std::vector> && ...),
                  "canopy: every tree passed to tree_map must have the first tree's node types (std::vector here)");
    (expect_length(ctx, link, v.size(), rest), ...);
    using C = decltype(g(KeyRef{}, v[0], rest[0]...));
    std::vector<C> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out.push_back(g(KeyRef::index(i), v[i], rest[i]...));
    return out;
  }
};

template <class E, std::size_t N>
struct node_impl<std::array<E, N>, NodeKind::array> {
  using T = std::array<E, N>;
  using child_types = type_list<E>;
  static constexpr bool dynamic = false;
  static constexpr std::string_view open = "[", close = "]";

  template <class V, class F>
  static void children(V& v, F&& f) {
    for (std::size_t i = 0; i < N; ++i) f(KeyRef::index(i), v[i]);
  }
  static void write_aux(const T&, AuxWriter&) {}
  template <class G>
  static void walk_aux(AuxReader&, G&& g) {
    for (std::size_t i = 0; i < N; ++i) g.template operator()<E>(KeyRef::index(i));
  }
  template <class G>
  static T build(AuxReader&, G&& g) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return T{g.template operator()<E>(KeyRef::index(I))...};
    }(std::make_index_sequence<N>{});
  }
  template <std::size_t I, class G, class... R>
  CANOPY_INLINE static decltype(auto) call(G& g, const T& v, const R&... rest) {
    return g(KeyRef::index(I), v[I], rest[I]...);
  }
  template <class Ctx, class G, class... R>
  CANOPY_INLINE static auto map(const Ctx&, const PathLink*, G&& g, const T& v, const R&... rest) {
    static_assert((is_std_array<R> && ...), "canopy: every tree passed to tree_map must have the first tree's node types (std::array here)");
    static_assert(((std::tuple_size_v<R> == N) && ...), "canopy: tree_map over std::arrays of different sizes");
    using C = decltype(g(KeyRef{}, v[0], rest[0]...));
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::array<C, N>{call<I>(g, v, rest...)...};
    }(std::make_index_sequence<N>{});
  }
};

/// std::tuple and std::pair. Element types may be references (std::tie in a pytree_node's children).
template <class T>
struct node_impl<T, NodeKind::tuple> {
  static constexpr std::size_t N = std::tuple_size_v<T>;
  template <std::size_t I>
  using elem = std::remove_cvref_t<std::tuple_element_t<I, T>>;
  using child_types = decltype([]<std::size_t... I>(std::index_sequence<I...>) {
    return type_list<elem<I>...>{};
  }(std::make_index_sequence<N>{}));
  static constexpr bool dynamic = false;
  static constexpr std::string_view open = "(", close = ")";

  template <class V, class F>
  static void children(V& v, F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (f(KeyRef::index(I), std::get<I>(v)), ...); }(
        std::make_index_sequence<N>{});
  }
  static void write_aux(const T&, AuxWriter&) {}
  template <class G>
  static void walk_aux(AuxReader&, G&& g) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (g.template operator()<elem<I>>(KeyRef::index(I)), ...); }(
        std::make_index_sequence<N>{});
  }
  template <class G>
  static auto build(AuxReader&, G&& g) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (is_instance<T, std::pair>)
        return std::pair<elem<0>, elem<1>>{g.template operator()<elem<I>>(KeyRef::index(I))...};
      else
        return std::tuple<elem<I>...>{g.template operator()<elem<I>>(KeyRef::index(I))...};
    }(std::make_index_sequence<N>{});
  }
  template <std::size_t I, class G, class... R>
  CANOPY_INLINE static auto call(G& g, const T& v, const R&... rest) {
    return g(KeyRef::index(I), std::get<I>(v), std::get<I>(rest)...);
  }
  template <class Ctx, class G, class... R>
  CANOPY_INLINE static auto map(const Ctx&, const PathLink*, G&& g, const T& v, const R&... rest) {
    static_assert(((std::tuple_size_v<R> == N) && ...), "canopy: tree_map over tuples of different arity");
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (is_instance<T, std::pair>)
        return std::pair<decltype(call<I>(g, v, rest...))...>{call<I>(g, v, rest...)...};
      else
        return std::tuple<decltype(call<I>(g, v, rest...))...>{call<I>(g, v, rest...)...};
    }(std::make_index_sequence<N>{});
  }
};

/// Map keys become key-path entries: strings as `["k"]`, integers as `[k]`.
template <class K>
KeyRef map_key(const K& k) {
  if constexpr (std::is_integral_v<K> || std::is_enum_v<K>) return KeyRef::key(std::int64_t(k));
  else return KeyRef::key(std::string_view(k));
}
template <class K>
void write_key(AuxWriter& w, const K& k) {
  if constexpr (std::is_integral_v<K> || std::is_enum_v<K>) w.word(std::uint64_t(std::int64_t(k)));
  else w.text(k);
}
template <class K>
K read_key(AuxReader& r) {
  if constexpr (std::is_integral_v<K> || std::is_enum_v<K>) return K(std::int64_t(r.word()));
  else return K(r.text());
}

template <class T>
struct node_impl<T, NodeKind::map> {
  using K = typename T::key_type;
  using V = typename T::mapped_type;
  static_assert(std::is_integral_v<K> || std::is_enum_v<K> || std::is_convertible_v<const K&, std::string_view>,
                "canopy: a map is a pytree node only with string or integer keys");
  using child_types = type_list<V>;
  static constexpr bool dynamic = true;
  static constexpr bool sorted = is_instance<T, std::map>;
  static constexpr std::string_view open = "{", close = "}";

  /// Entries in key order; unordered maps are sorted on the way, as JAX sorts dict keys.
  template <class M, class F>
  static void in_order(M& m, F&& f) {
    if constexpr (sorted) {
      for (auto& kv : m) f(kv);
    } else {
      std::vector<decltype(&*m.begin())> entries;
      entries.reserve(m.size());
      for (auto& kv : m) entries.push_back(&kv);
      std::sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      for (auto* kv : entries) f(*kv);
    }
  }
  template <class M, class F>
  static void children(M& m, F&& f) {
    in_order(m, [&](auto& kv) { f(map_key(kv.first), kv.second); });
  }
  static void write_aux(const T& m, AuxWriter& w) {
    w.word(m.size());
    in_order(m, [&](const auto& kv) { write_key(w, kv.first); });
  }
  template <class G>
  static void walk_aux(AuxReader& r, G&& g) {
    std::vector<K> keys(r.word());
    for (K& k : keys) k = read_key<K>(r);
    for (const K& k : keys) g.template operator()<V>(map_key(k));
  }
  template <class G>
  static T build(AuxReader& r, G&& g) {
    std::vector<K> keys(r.word());
    for (K& k : keys) k = read_key<K>(r);
    T out;
    for (const K& k : keys) out.emplace(k, g.template operator()<V>(map_key(k)));
    return out;
  }
  template <class Ctx, class R>
  static const auto& find(const Ctx& ctx, const PathLink* link, const R& rest, const K& k, std::size_t n) {
    auto it = rest.find(k);
    if (it == rest.end() || rest.size() != n) {
      std::string what;
      if (it == rest.end()) {
        KeyEntry key = map_key(k).kind == KeyRef::Kind::int_key ? KeyEntry::key(map_key(k).id) : KeyEntry::key(map_key(k).name);
        std::string shown = key.str();
        what.append("key ").append(shown.substr(1, shown.size() - 2)).append(" is missing from another tree");
      } else {
        what.append("maps with ").append(std::to_string(n)).append(" vs ").append(std::to_string(rest.size())).append(" keys");
      }
      ctx.mismatch(link, what);
    }
    return it->second;
  }
  template <class Ctx, class G, class... R>
  CANOPY_INLINE static auto map([[maybe_unused]] const Ctx& ctx, [[maybe_unused]] const PathLink* link, G&& g, const T& m,
                  const R&... rest) {
    static_assert(((is_instance<R, std::map> || is_instance<R, std::unordered_map>) && ...),
                  "canopy: every tree passed to tree_map must have the first tree's node types (a map here)");
    using C = decltype(g(KeyRef{}, std::declval<const V&>(), std::declval<const typename R::mapped_type&>()...));
    using Out = std::conditional_t<sorted, std::map<K, C>, std::unordered_map<K, C>>;
    Out out;
    if constexpr (!sorted) out.reserve(m.size());
    in_order(m, [&](const auto& kv) {
      out.emplace(kv.first, g(map_key(kv.first), kv.second, find(ctx, link, rest, kv.first, m.size())...));
    });
    return out;
  }
};

template <class E>
struct node_impl<std::optional<E>, NodeKind::optional> {
  using T = std::optional<E>;
  using child_types = type_list<E>;
  static constexpr bool dynamic = true;
  static constexpr std::string_view open = "", close = "";  // engaged: its value; empty: None

  template <class V, class F>
  static void children(V& v, F&& f) {
    if (v) f(KeyRef::none(), *v);
  }
  static void write_aux(const T& v, AuxWriter& w) { w.word(v.has_value()); }
  template <class G>
  static void walk_aux(AuxReader& r, G&& g) {
    if (r.word()) g.template operator()<E>(KeyRef::none());
  }
  template <class G>
  static T build(AuxReader& r, G&& g) {
    if (!r.word()) return std::nullopt;
    return T(g.template operator()<E>(KeyRef::none()));
  }
  template <class Ctx, class G, class... R>
  CANOPY_INLINE static auto map([[maybe_unused]] const Ctx& ctx, [[maybe_unused]] const PathLink* link, G&& g, const T& v,
                  const R&... rest) {
    static_assert((is_instance<R, std::optional> && ...),
                  "canopy: every tree passed to tree_map must have the first tree's node types (std::optional here)");
    [[maybe_unused]] auto check = [&](bool other) {
      if (other != v.has_value())
        ctx.mismatch(link, std::string(v ? "an engaged" : "an empty") + " optional vs " + (other ? "an engaged" : "an empty") + " one");
    };
    (check(rest.has_value()), ...);
    using C = decltype(g(KeyRef{}, *v, *rest...));
    if (!v) return std::optional<C>();
    return std::optional<C>(g(KeyRef::none(), *v, *rest...));
  }
};

template <class... E>
struct node_impl<std::variant<E...>, NodeKind::variant> {
  using T = std::variant<E...>;
  using child_types = type_list<E...>;
  static constexpr bool dynamic = true;
  static constexpr std::string_view open = "variant(", close = ")";
  template <std::size_t I>
  using alt = std::variant_alternative_t<I, T>;

  template <class V, class F>
  static void children(V& v, F&& f) {
    std::visit([&](auto& x) { f(KeyRef::none(), x); }, v);
  }
  static void write_aux(const T& v, AuxWriter& w) { w.word(v.index()); }
  /// Calls g with the compile-time index of the runtime alternative i.
  template <class G>
  static decltype(auto) dispatch(std::size_t i, G&& g) {
    if (i >= sizeof...(E)) throw TreeError("treedef: variant index out of range for this type");
    using R = decltype(g(std::integral_constant<std::size_t, 0>{}));
    return [&]<std::size_t... I>(std::index_sequence<I...>) -> R {
      using Fn = R (*)(G&);
      static constexpr Fn table[] = {+[](G& g2) -> R { return g2(std::integral_constant<std::size_t, I>{}); }...};
      return table[i](g);
    }(std::index_sequence_for<E...>{});
  }
  template <std::size_t I, class G, class... R>
  using mapped_alt = decltype(std::declval<G&>()(KeyRef{}, std::declval<const alt<I>&>(), std::get<I>(std::declval<const R&>())...));
  template <class G, class... R, std::size_t... I>
  static auto mapped(std::index_sequence<I...>) -> std::variant<mapped_alt<I, G, R...>...>;
  template <class G>
  static void walk_aux(AuxReader& r, G&& g) {
    dispatch(r.word(), [&](auto I) { g.template operator()<alt<I()>>(KeyRef::none()); });
  }
  template <class G>
  static T build(AuxReader& r, G&& g) {
    return dispatch(r.word(), [&](auto I) { return T(std::in_place_index<I()>, g.template operator()<alt<I()>>(KeyRef::none())); });
  }
  template <class Ctx, class G, class... R>
  CANOPY_INLINE static auto map([[maybe_unused]] const Ctx& ctx, [[maybe_unused]] const PathLink* link, G&& g, const T& v,
                  const R&... rest) {
    static_assert((is_instance<R, std::variant> && ...),
                  "canopy: every tree passed to tree_map must have the first tree's node types (std::variant here)");
    [[maybe_unused]] auto check = [&](std::size_t other) {
      if (other != v.index())
        ctx.mismatch(link, "variant alternative " + std::to_string(v.index()) + " vs " + std::to_string(other));
    };
    (check(rest.index()), ...);
    using Out = decltype(mapped<G, R...>(std::index_sequence_for<E...>{}));
    return dispatch(v.index(), [&](auto I) {
      return Out(std::in_place_index<I()>, g(KeyRef::none(), std::get<I()>(v), std::get<I()>(rest)...));
    });
  }
};

}  // namespace canopy::detail
