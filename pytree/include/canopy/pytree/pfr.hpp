// Plain aggregates as pytree nodes, reflected with Boost.PFR. Children are keyed by field name
// (`.w`, read at compile time by detail/field_names.hpp), or by position (`.0`) for the types and
// compilers that cannot give names (reference members, compilers other than GCC and clang).
#pragma once

#include <boost/pfr/core.hpp>

#include "canopy/pytree/detail/field_names.hpp"
#include "canopy/pytree/detail/rebind.hpp"
#include "canopy/pytree/detail/type_name.hpp"
#include "canopy/pytree/key_path.hpp"
#include "canopy/pytree/traits.hpp"

namespace canopy::detail {

template <class T>
struct node_impl<T, NodeKind::aggregate> {
  static constexpr std::size_t N = boost::pfr::tuple_size_v<T>;
  template <std::size_t I>
  using field = boost::pfr::tuple_element_t<I, T>;
  using child_types = decltype([]<std::size_t... I>(std::index_sequence<I...>) {
    return type_list<field<I>...>{};
  }(std::make_index_sequence<N>{}));
  static constexpr bool dynamic = false;
  static constexpr std::string_view open = "(", close = ")";
  static const std::string& label() { return type_name<T>(); }
  template <std::size_t I>
  static constexpr KeyRef make_key() noexcept {
    if constexpr (has_field_names<T>) return KeyRef::field(field_name<T, I>);
    else return KeyRef::position(I);
  }
  /// The I-th child's key: a compile-time constant, so the traversals pay nothing for names.
  template <std::size_t I>
  static constexpr KeyRef key = make_key<I>();

  template <class V, class F>
  static void children(V& v, F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (f(key<I>, boost::pfr::get<I>(v)), ...); }(
        std::make_index_sequence<N>{});
  }
  static void write_aux(const T&, AuxWriter&) {}
  template <class G>
  static void walk_aux(AuxReader&, G&& g) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (g.template operator()<field<I>>(key<I>), ...); }(
        std::make_index_sequence<N>{});
  }
  template <class G>
  static T build(AuxReader&, G&& g) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return T{g.template operator()<field<I>>(key<I>)...};
    }(std::make_index_sequence<N>{});
  }
  template <std::size_t I, class G, class... R>
  CANOPY_INLINE static decltype(auto) call(G& g, const T& v, const R&... rest) {
    return g(key<I>, boost::pfr::get<I>(v), boost::pfr::get<I>(rest)...);
  }
  template <class Ctx, class G, class... R>
  CANOPY_INLINE static auto map(const Ctx&, const PathLink*, G&& g, const T& v, const R&... rest) {
    static_assert(((std::is_aggregate_v<R> && boost::pfr::tuple_size_v<R> == N) && ...),
                  "canopy: every tree passed to tree_map must have the first tree's node types (an aggregate with as many fields)");
    return [&]<std::size_t... I>(std::index_sequence<I...>) CANOPY_INLINE_LAMBDA {
      using Mapped = type_list<decltype(call<I>(g, v, rest...))...>;
      using Out = rebind_t<T, Mapped, type_list<field<I>...>, G, R...>;
      static_assert(std::is_same_v<Mapped, type_list<boost::pfr::tuple_element_t<I, Out>...>>,
                    "canopy: tree_map changed leaf types but the aggregate cannot hold them; make it a template over "
                    "its leaf type (Params<Array> -> Params<int>)");
      return Out{call<I>(g, v, rest...)...};
    }(std::make_index_sequence<N>{});
  }
};

}  // namespace canopy::detail
