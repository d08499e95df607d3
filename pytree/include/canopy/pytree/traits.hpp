// What is a leaf, what is a node: the customisation points and the compile-time
// classification every pytree algorithm dispatches on.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

/// tree_map over a fixed-shape struct must compile to the hand-written loop; GCC's inliner gives
/// up on deep trees of small lambdas unless told.
#if defined(__GNUC__)
#define CANOPY_INLINE [[gnu::always_inline]] inline
#define CANOPY_INLINE_LAMBDA __attribute__((always_inline))
#else
#define CANOPY_INLINE inline
#define CANOPY_INLINE_LAMBDA
#endif

namespace canopy {

/// Leaf types. Arithmetic types, enums and std::string are leaves; specialise to add your own
/// (canopy::Array and Eigen's dense Matrix/Array do).
template <class T>
struct is_leaf : std::bool_constant<std::is_arithmetic_v<T> || std::is_enum_v<T>> {};
template <>
struct is_leaf<std::string> : std::true_type {};

/// The customisation point for user classes: the C++ `register_pytree_node`. Specialise with
///   static auto children(const T&);   // a pytree of T's children: usually std::tie(...) or a tuple
///   static T from_children(C&& c);     // rebuild T; make it a template to let tree_map change leaf types
///   static constexpr std::array<std::string_view, N> names = {...};   // optional: `.name` key paths
template <class T>
struct pytree_node;

/// A compile-time `is_leaf` predicate (JAX's is_leaf=): `leaf_if([]<class T>(std::type_identity<T>) {
/// return std::is_same_v<T, Layer>; })` makes every `Layer` a leaf. Decided by type, since the type
/// fixes a C++ tree's structure.
template <class Pred>
struct LeafIf {
  template <class T>
  static constexpr bool test = Pred{}(std::type_identity<T>{});
};
/// Builds a LeafIf option from a captureless lambda.
template <class Pred>
constexpr LeafIf<Pred> leaf_if(Pred) {
  static_assert(std::is_empty_v<Pred>, "canopy: leaf_if takes a captureless lambda (it is evaluated per type)");
  return {};
}
/// The default option: only is_leaf<T> decides.
struct NoLeafIf {
  template <class T>
  static constexpr bool test = false;
};

namespace detail {

template <class T>
inline constexpr bool is_leaf_if_option = false;
template <class P>
inline constexpr bool is_leaf_if_option<LeafIf<P>> = true;
template <>
inline constexpr bool is_leaf_if_option<NoLeafIf> = true;

template <class T, template <class...> class Tmpl>
inline constexpr bool is_instance = false;
template <template <class...> class Tmpl, class... A>
inline constexpr bool is_instance<Tmpl<A...>, Tmpl> = true;

template <class T>
inline constexpr bool is_std_array = false;
template <class E, std::size_t N>
inline constexpr bool is_std_array<std::array<E, N>> = true;

template <class T>
concept user_node = requires(const T& t) { pytree_node<T>::children(t); };

template <class T>
concept hana_struct = requires { typename T::hana_accessors_impl; };

/// How a type is traversed. Order matters: leaves win, then user registrations, then the
/// standard containers, then Hana structs, then any other aggregate (through PFR).
enum class NodeKind { none, leaf, user, vector, array, tuple, map, optional, variant, hana, aggregate };

template <class T, class P>
consteval NodeKind kind_of() {
  if constexpr (is_leaf<T>::value || P::template test<T>) return NodeKind::leaf;
  else if constexpr (user_node<T>) return NodeKind::user;
  else if constexpr (is_instance<T, std::vector>) return NodeKind::vector;
  else if constexpr (is_std_array<T>) return NodeKind::array;
  else if constexpr (is_instance<T, std::tuple> || is_instance<T, std::pair>) return NodeKind::tuple;
  else if constexpr (is_instance<T, std::map> || is_instance<T, std::unordered_map>) return NodeKind::map;
  else if constexpr (is_instance<T, std::optional>) return NodeKind::optional;
  else if constexpr (is_instance<T, std::variant>) return NodeKind::variant;
  else if constexpr (hana_struct<T>) return NodeKind::hana;
  else if constexpr (std::is_aggregate_v<T> && std::is_class_v<T> && !std::is_array_v<T>) return NodeKind::aggregate;
  else return NodeKind::none;
}

template <class T, class P>
inline constexpr bool leaf_v = kind_of<T, P>() == NodeKind::leaf;

/// One implementation per node kind, specialised in std.hpp, pfr.hpp, hana.hpp and user.hpp.
template <class T, NodeKind K = kind_of<T, NoLeafIf>()>
struct node_impl;

/// A list of types, for the compile-time walks.
template <class... T>
struct type_list {};

template <class T>
struct dependent_false : std::false_type {};

/// What tree_map keeps of f's result: an Eigen expression (`x * 0.5f`, `a + b`) is evaluated
/// into its plain matrix, so mapping over Eigen leaves gives Eigen leaves, not expressions that
/// dangle once their operands are gone.
template <class R>
auto as_leaf_value(R&& r) {
  using D = std::remove_cvref_t<R>;
  if constexpr (!is_leaf<D>::value && requires { typename D::PlainObject; }) {
    if constexpr (is_leaf<typename D::PlainObject>::value) return typename D::PlainObject(std::forward<R>(r));
    else return std::forward<R>(r);
  } else {
    return std::forward<R>(r);
  }
}

}  // namespace detail
}  // namespace canopy
