// Structs adapted with BOOST_HANA_DEFINE_STRUCT as pytree nodes: their field names make the
// key paths (`.layers[2].b`).
#pragma once

#include <boost/hana/accessors.hpp>
#include <boost/hana/at.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>

#include "canopy/pytree/detail/rebind.hpp"
#include "canopy/pytree/detail/type_name.hpp"
#include "canopy/pytree/key_path.hpp"
#include "canopy/pytree/traits.hpp"

namespace canopy::detail {

template <class T>
struct node_impl<T, NodeKind::hana> {
  static constexpr std::size_t N = decltype(boost::hana::length(boost::hana::accessors<T>()))::value;
  template <std::size_t I>
  static constexpr auto accessor() {
    return boost::hana::at_c<I>(boost::hana::accessors<T>());
  }
  template <std::size_t I>
  static constexpr std::string_view name() {
    return boost::hana::to<const char*>(boost::hana::first(accessor<I>()));
  }
  template <std::size_t I, class V>
  static decltype(auto) get(V& v) {
    return boost::hana::second(accessor<I>())(v);
  }
  template <std::size_t I>
  using field = std::remove_cvref_t<decltype(get<I>(std::declval<T&>()))>;
  using child_types = decltype([]<std::size_t... I>(std::index_sequence<I...>) {
    return type_list<field<I>...>{};
  }(std::make_index_sequence<N>{}));
  static constexpr bool dynamic = false;
  static constexpr std::string_view open = "(", close = ")";
  static const std::string& label() { return type_name<T>(); }

  template <class V, class F>
  static void children(V& v, F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (f(KeyRef::field(name<I>()), get<I>(v)), ...); }(
        std::make_index_sequence<N>{});
  }
  static void write_aux(const T&, AuxWriter&) {}
  template <class G>
  static void walk_aux(AuxReader&, G&& g) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (g.template operator()<field<I>>(KeyRef::field(name<I>())), ...); }(
        std::make_index_sequence<N>{});
  }
  template <class G>
  static T build(AuxReader&, G&& g) {
    static_assert(std::is_default_constructible_v<T>, "canopy: a BOOST_HANA_DEFINE_STRUCT node must be default-constructible");
    T out{};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((get<I>(out) = g.template operator()<field<I>>(KeyRef::field(name<I>()))), ...);
    }(std::make_index_sequence<N>{});
    return out;
  }
  template <std::size_t I, class G, class... R>
  CANOPY_INLINE static decltype(auto) call(G& g, const T& v, const R&... rest) {
    return g(KeyRef::field(name<I>()), get<I>(v), node_impl<R>::template get<I>(rest)...);
  }
  template <class Ctx, class G, class... R>
  CANOPY_INLINE static auto map(const Ctx&, const PathLink*, G&& g, const T& v, const R&... rest) {
    static_assert((hana_struct<R> && ...),
                  "canopy: every tree passed to tree_map must have the first tree's node types (a Hana struct here)");
    return [&]<std::size_t... I>(std::index_sequence<I...>) CANOPY_INLINE_LAMBDA {
      using Mapped = type_list<std::remove_cvref_t<decltype(call<I>(g, v, rest...))>...>;
      using Out = rebind_t<T, Mapped, type_list<field<I>...>, G, R...>;
      Out out{};
      ((node_impl<Out>::template get<I>(out) = call<I>(g, v, rest...)), ...);
      return out;
    }(std::make_index_sequence<N>{});
  }
};

}  // namespace canopy::detail
