// Equality, hashing and printing of a primitive's Params aggregate, derived once from its fields
// (Boost.PFR), so that CSE, jit cache keys and printed programs need nothing per primitive.
// A Params type holding something these cannot see through (a function, Arrays) declares
// `params_equal`, `params_hash` and `params_string` statics in its primitive instead.
#pragma once

#include <array>
#include <cstring>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/pfr/core.hpp>

#include "canopy/dtype.hpp"
#include "canopy/pytree/detail/field_names.hpp"
#include "canopy/shape.hpp"

namespace canopy::detail {

/// The names param_print shows for T's fields (positions where the compiler gives none).
template <class T>
const std::vector<std::string>& param_field_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (has_field_names<T>) (n.emplace_back(field_name<T, I>), ...);
      else (n.push_back(std::to_string(I)), ...);
    }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
    return n;
  }();
  return names;
}

/// Mixes `v` into the running hash `h` (boost::hash_combine's constant, 64-bit).
constexpr std::uint64_t hash_mix(std::uint64_t h, std::uint64_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 12) + (h >> 4));
}

template <class T>
struct param_is_vector : std::false_type {};
template <class T, class A>
struct param_is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct param_is_optional : std::false_type {};
template <class T>
struct param_is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct param_is_pair : std::false_type {};
template <class A, class B>
struct param_is_pair<std::pair<A, B>> : std::true_type {};
template <class T>
struct param_is_array : std::false_type {};
template <class T, std::size_t N>
struct param_is_array<std::array<T, N>> : std::true_type {};

/// Whether the field walk below understands T (else the primitive must say how).
template <class T>
constexpr bool param_walkable() {
  if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_same_v<T, std::string> || std::is_same_v<T, Shape>)
    return true;
  else if constexpr (param_is_vector<T>::value || param_is_optional<T>::value || param_is_array<T>::value)
    return param_walkable<typename T::value_type>();
  else if constexpr (param_is_pair<T>::value)
    return param_walkable<typename T::first_type>() && param_walkable<typename T::second_type>();
  else if constexpr (std::is_aggregate_v<T> && !std::is_array_v<T>)
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (param_walkable<boost::pfr::tuple_element_t<I, T>>() && ...);
    }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
  else
    return false;
}

template <class T>
bool param_equal(const T& a, const T& b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a == b || (a != a && b != b);  // NaN fill values compare equal to themselves
  } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_same_v<T, std::string> ||
                       std::is_same_v<T, Shape>) {
    return a == b;
  } else if constexpr (param_is_vector<T>::value || param_is_array<T>::value) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!param_equal(a[i], b[i])) return false;
    return true;
  } else if constexpr (param_is_optional<T>::value) {
    return a.has_value() == b.has_value() && (!a || param_equal(*a, *b));
  } else if constexpr (param_is_pair<T>::value) {
    return param_equal(a.first, b.first) && param_equal(a.second, b.second);
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return (param_equal(boost::pfr::get<I>(a), boost::pfr::get<I>(b)) && ...);
    }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
  }
}

template <class T>
std::uint64_t param_hash(const T& v, std::uint64_t h = 0xcbf29ce484222325ull) {
  if constexpr (std::is_floating_point_v<T>) {
    double d = v == 0 ? 0.0 : static_cast<double>(v);  // -0.0 == 0.0
    std::uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    return hash_mix(h, v != v ? 0x7ff8ull : bits);
  } else if constexpr (std::is_arithmetic_v<T>) {
    return hash_mix(h, static_cast<std::uint64_t>(v));
  } else if constexpr (std::is_enum_v<T>) {
    return hash_mix(h, static_cast<std::uint64_t>(v));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return hash_mix(h, std::hash<std::string>{}(v));
  } else if constexpr (std::is_same_v<T, Shape> || param_is_vector<T>::value || param_is_array<T>::value) {
    h = hash_mix(h, v.size());
    for (const auto& x : v) h = param_hash(x, h);
    return h;
  } else if constexpr (param_is_optional<T>::value) {
    return v ? param_hash(*v, hash_mix(h, 1)) : hash_mix(h, 0);
  } else if constexpr (param_is_pair<T>::value) {
    return param_hash(v.second, param_hash(v.first, h));
  } else {
    boost::pfr::for_each_field(v, [&](const auto& f) { h = param_hash(f, h); });
    return h;
  }
}

/// jaxpr-style text of one parameter value: `(1, 0)`, `[2,3]`, `f32`, `None`.
template <class T>
void param_print(std::ostream& os, const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "True" : "False");
  } else if constexpr (std::is_same_v<T, DType>) {
    os << name(v);
  } else if constexpr (std::is_enum_v<T>) {
    // By name where the enum's namespace says one (to_string(Precision) gives "HIGHEST").
    if constexpr (requires { os << to_string(v); }) os << to_string(v);
    else os << static_cast<long long>(v);
  } else if constexpr (std::is_arithmetic_v<T>) {
    os << +v;
  } else if constexpr (std::is_same_v<T, std::string>) {
    os << v;
  } else if constexpr (std::is_same_v<T, Shape>) {
    os << to_string(v);
  } else if constexpr (param_is_vector<T>::value || param_is_array<T>::value) {
    os << '(';
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) os << ", ";
      param_print(os, v[i]);
    }
    os << (v.size() == 1 ? ",)" : ")");
  } else if constexpr (param_is_optional<T>::value) {
    if (v) param_print(os, *v);
    else os << "None";
  } else if constexpr (param_is_pair<T>::value) {
    os << '(';
    param_print(os, v.first);
    os << ", ";
    param_print(os, v.second);
    os << ')';
  } else {
    // A nested aggregate prints its fields as name=value (positional names where none are known).
    os << '(';
    const auto& names = param_field_names<T>();
    std::size_t i = 0;
    boost::pfr::for_each_field(v, [&](const auto& f) {
      if (i) os << ", ";
      os << names[i++] << '=';
      param_print(os, f);
    });
    os << ')';
  }
}

/// The `k=v k2=v2` list between a primitive's brackets (empty for empty Params).
template <class Params>
std::string params_text(const Params& p) {
  std::ostringstream os;
  const auto& names = param_field_names<Params>();
  std::size_t i = 0;
  boost::pfr::for_each_field(p, [&](const auto& f) {
    if (i) os << ' ';
    os << names[i++] << '=';
    param_print(os, f);
  });
  return os.str();
}

}  // namespace canopy::detail
