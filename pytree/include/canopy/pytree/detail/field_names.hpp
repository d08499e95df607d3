// Field names of plain aggregates at compile time, for key paths (`.layers[1].w`): Boost 1.81's
// PFR has positions only, so the names are read from the compiler's __PRETTY_FUNCTION__.
//
// How: `fake_object<T>.value` is a declared (extern), never defined object of T. The address of
// its I-th field (through PFR's structured-binding tie) is a constant expression, so it can be a
// template argument; a function template instantiated with it spells the field's name in its
// __PRETTY_FUNCTION__ (GCC: `[with auto H = field_ptr<...>{(& ...::value.Layer::w)}]`, clang:
// `[H = {&...value.w}]`), and the identifier before the closing `}` is the name. The object is
// never read, so T need not be default-constructible, and nothing is emitted for it.
//
// Fallback to positions (`.0`, `.1`) for the whole type, when names cannot be had:
//   - a compiler other than GCC or clang (no known __PRETTY_FUNCTION__ format);
//   - a type with a reference member (its field's address is not a constant expression);
//   - a name the parser does not recognise (it then refuses rather than guess).
// Everything is computed during compilation: a name is a string_view into a constexpr array.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

#include <boost/pfr/core.hpp>

#if defined(__clang__)
#pragma clang diagnostic push
// fake_object<T>.value is declared on purpose and never defined: only its fields' addresses are
// used, as template arguments.
#pragma clang diagnostic ignored "-Wundefined-var-template"
#pragma clang diagnostic ignored "-Wundefined-internal"
#endif

namespace canopy::detail {

#if defined(__GNUC__) || defined(__clang__)
inline constexpr bool pretty_function_names = true;
#else
inline constexpr bool pretty_function_names = false;
#endif

template <class T>
struct fake_wrapper {
  const T value;
};
/// A T that exists only for its fields' addresses; declared extern, never defined, never read.
/// (A static data member instead would be rejected for local and anonymous-namespace types.)
template <class T>
extern const fake_wrapper<T> fake_object;

/// A field's address wrapped in a class so that both compilers print it as a template argument.
template <class P>
struct field_ptr {
  P ptr;
};
template <class P>
constexpr field_ptr<P> wrap_field_ptr(P p) noexcept {
  return {p};
}

template <class P>
constexpr bool is_constant_address(P) noexcept {
  return true;
}

/// Whether the address of T's I-th field is a constant expression (false for reference members).
template <class T, std::size_t I>
concept addressable_field =
    requires { typename std::bool_constant<is_constant_address(&boost::pfr::get<I>(fake_object<T>.value))>; };

/// The text naming the template argument H, which ends with the field's name.
template <auto H>
constexpr std::string_view pretty_function() noexcept {
  return __PRETTY_FUNCTION__;
}

constexpr bool is_identifier_char(char c) noexcept {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/// The identifier just before the last `}` (and GCC's `)`), preceded by `.` or `::`; empty when
/// the text is not of that form.
constexpr std::string_view parse_field_name(std::string_view text) noexcept {
  std::size_t end = text.rfind('}');
  if (end == std::string_view::npos) return {};
  while (end > 0 && (text[end - 1] == ')' || text[end - 1] == ' ')) --end;
  std::size_t begin = end;
  while (begin > 0 && is_identifier_char(text[begin - 1])) --begin;
  if (begin == end || begin == 0 || (text[begin] >= '0' && text[begin] <= '9')) return {};
  if (text[begin - 1] != '.' && text[begin - 1] != ':') return {};
  return text.substr(begin, end - begin);
}

/// The I-th field's name as parsed (empty on failure); only for addressable fields.
template <class T, std::size_t I>
constexpr std::string_view raw_field_name() noexcept {
  return parse_field_name(pretty_function<wrap_field_ptr(&boost::pfr::get<I>(fake_object<T>.value))>());
}

template <class T>
consteval bool compute_has_field_names() {
  if constexpr (!pretty_function_names || !std::is_aggregate_v<T> || !std::is_class_v<T>) {
    return false;
  } else {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr ((addressable_field<T, I> && ...)) return (!raw_field_name<T, I>().empty() && ...);
      else return false;
    }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
  }
}

/// Whether every field of the aggregate T has a name canopy can read (else keys are positions);
/// false for a type that is not an aggregate class.
template <class T>
inline constexpr bool has_field_names = compute_has_field_names<T>();

/// The I-th field's name, NUL-terminated, in its own constant array (not the whole function text).
template <class T, std::size_t I>
inline constexpr auto field_name_storage = [] {
  constexpr std::string_view name = raw_field_name<T, I>();
  std::array<char, name.size() + 1> out{};
  for (std::size_t i = 0; i < name.size(); ++i) out[i] = name[i];
  return out;
}();

/// The name of T's I-th field (`w` in `struct Layer { Array w, b; }`); needs has_field_names<T>.
template <class T, std::size_t I>
inline constexpr std::string_view field_name{field_name_storage<T, I>.data(), field_name_storage<T, I>.size() - 1};

}  // namespace canopy::detail

#if defined(__clang__)
#pragma clang diagnostic pop
#endif
