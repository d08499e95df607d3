// The type tree_map returns for a struct whose leaf types it changes: `Params<Array>` mapped
// to ints is `Params<int>`. Each template argument is mapped as a tree in its own right.
#pragma once

#include <type_traits>

#include "canopy/pytree/key_path.hpp"
#include "canopy/pytree/traits.hpp"

namespace canopy::detail {

template <class T>
struct template_of {
  static constexpr bool is_template = false;
};
template <template <class...> class Tmpl, class... A>
struct template_of<Tmpl<A...>> {
  static constexpr bool is_template = true;
  using args = type_list<A...>;
  template <class... B>
  using with = Tmpl<B...>;
};

/// The K-th template argument of R, if R is an instance of the same template as T; else Fallback.
template <class T, class R, std::size_t K, class Fallback>
struct rest_arg {
  using type = Fallback;
};
template <template <class...> class Tmpl, class... A, class... B, std::size_t K, class Fallback>
  requires(sizeof...(A) == sizeof...(B))
struct rest_arg<Tmpl<A...>, Tmpl<B...>, K, Fallback> {
  using type = std::tuple_element_t<K, std::tuple<B...>>;
};

template <class A, class G, class... RA>
auto map_arg() {
  if constexpr (kind_of<A, NoLeafIf>() == NodeKind::none) return std::type_identity<A>{};
  else return std::type_identity<std::remove_cvref_t<decltype(std::declval<G&>()(KeyRef{}, std::declval<const A&>(), std::declval<const RA&>()...))>>{};
}

template <class T, std::size_t K, class A, class G, class... R>
using mapped_arg_t = typename decltype(map_arg<A, G, typename rest_arg<T, R, K, A>::type...>())::type;

template <class T, class Mapped, class Fields, class G, class... R>
struct rebind {
  using type = T;  // leaf types unchanged: the same struct
};
template <class T, class... M, class... F, class G, class... R>
  requires(!std::is_same_v<type_list<M...>, type_list<F...>>)
struct rebind<T, type_list<M...>, type_list<F...>, G, R...> {
  static auto compute() {
    using TT = template_of<T>;
    static_assert(TT::is_template,
                  "canopy: tree_map changed leaf types but this struct is not a template over its leaf type; "
                  "map to the same leaf type or make it a template (Params<Array> -> Params<int>)");
    if constexpr (TT::is_template) {
      return []<class... A>(type_list<A...>) {
        return []<std::size_t... K>(std::index_sequence<K...>) {
          return std::type_identity<typename TT::template with<mapped_arg_t<T, K, A, G, R...>...>>{};
        }(std::index_sequence_for<A...>{});
      }(typename TT::args{});
    } else {
      return std::type_identity<T>{};
    }
  }
  using type = typename decltype(compute())::type;
};

template <class T, class Mapped, class Fields, class G, class... R>
using rebind_t = typename rebind<T, Mapped, Fields, G, R...>::type;

}  // namespace canopy::detail
