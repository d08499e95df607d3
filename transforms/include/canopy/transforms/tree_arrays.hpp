// The bridge between the caller's pytrees and the flat Array lists of the transforms' cores:
// collect a tree's Array leaves in order, and rebuild a tree of the same type from new Arrays.
// Leaves that are not Arrays (ints, flags, config) are not transformed: they pass through.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include <tuple>
#include <type_traits>

#include "canopy/array_pytree.hpp"
#include "canopy/core/autodiff.hpp"
#include "canopy/error.hpp"
#include "canopy/pytree.hpp"

namespace canopy::detail {

template <class T>
inline constexpr bool is_array_v = std::is_same_v<std::remove_cvref_t<T>, Array>;

/// Appends the Array leaves of `tree` to `out`, in tree_flatten order.
template <class T>
void append_arrays(const T& tree, Arrays& out) {
  tree_reduce(
      [&](int n, const auto& leaf) {
        if constexpr (is_array_v<decltype(leaf)>) out.push_back(leaf);
        return n;
      },
      tree, 0);
}

/// The key path of each Array leaf of `arg`, prefixed with `root` (for error messages).
template <class T>
void append_names(const std::string& root, const T& arg, std::vector<std::string>& names) {
  tree_map_with_path(
      [&](const KeyPath& path, const auto& leaf) {
        if constexpr (is_array_v<decltype(leaf)>) names.push_back(root + keystr(path));
        return leaf;
      },
      arg);
}

/// The key paths of the Array leaves of each of `args` ("args[0].layers[1].w", as jax writes them).
template <class... A>
std::vector<std::string> argument_names(const std::tuple<A...>& args) {
  std::vector<std::string> names;
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    (append_names("args[" + std::to_string(K) + "]", std::get<K>(args), names), ...);
  }(std::index_sequence_for<A...>{});
  return names;
}

/// TypeError naming `api` and the key path of the first float/double leaf of `arg` (`root` is
/// its name, "args[0]"). JAX differentiates a Python float because it becomes a tracer; a C++
/// `float` field cannot: arithmetic on it is plain C++, invisible to every interpreter, so its
/// derivative cannot be taken and a gradient of 0 in its field would be silently wrong. Integer,
/// bool, enum and string leaves are fine: f is piecewise constant in them.
template <class T>
void reject_float_leaves(const char* api, const std::string& root, const T& arg) {
  const bool any = tree_reduce(
      [](bool found, const auto& leaf) {
        return found || std::is_floating_point_v<std::remove_cvref_t<decltype(leaf)>>;
      },
      arg, false);
  if (!any) return;
  std::string path;
  double value = 0;
  tree_map_with_path(
      [&](const KeyPath& p, const auto& leaf) {
        if constexpr (std::is_floating_point_v<std::remove_cvref_t<decltype(leaf)>>)
          if (path.empty()) path = root + keystr(p), value = static_cast<double>(leaf);
        return leaf;
      },
      arg);
  raise<TypeError>(api, "input", path,
                   concat("is a plain floating-point value (", value, "), which cannot be differentiated in C++"),
                   "make it a canopy::Array (scalar(x)) to differentiate it, or take it out of the "
                   "differentiated arguments (another argument outside argnums, or captured by f)");
}

/// reject_float_leaves for each of `args`, named args[0], args[1], ...
template <class... A>
void reject_float_leaves_in(const char* api, const std::tuple<A...>& args) {
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    (reject_float_leaves(api, "args[" + std::to_string(K) + "]", std::get<K>(args)), ...);
  }(std::index_sequence_for<A...>{});
}

/// TreeError naming `api` and the first key path where b's structure leaves a's (a tree_map
/// over both that keeps a's leaves, so any pytree type works); TypeError if none is found but
/// the numbers of Array leaves still differ.
template <class T, class U>
void require_same_structure(const char* api, const T& a, const U& b) {
  auto keep = [](const auto& x, const auto&...) { return x; };
  (void)tree_map_impl<NoLeafIf>(api, keep, a, b);
  raise<TypeError>(api, "structure", "", "holds a different number of Array leaves than the primals");
}

/// The avals of xs.
std::vector<Aval> avals_of(const Arrays& xs);

/// ShapeError/TypeError naming `api`, `what` and the leaf's key path (names() is called only
/// then) unless each of `given` has the shape and dtype of the matching `expected`, as jax
/// requires of tangents and cotangents.
void check_like(const char* api, const char* what, const Arrays& given, const std::vector<Aval>& expected,
                const std::function<std::vector<std::string>()>& names);

/// `tree` with its Array leaves replaced by xs[pos], xs[pos + 1], ... (pos advances).
template <class T>
T with_arrays(const T& tree, const Arrays& xs, std::size_t& pos) {
  return tree_map(
      [&](const auto& leaf) {
        if constexpr (is_array_v<decltype(leaf)>) return xs.at(pos++);
        else return leaf;
      },
      tree);
}

/// with_arrays for a gradient: leaves that are not Arrays (integers, flags, strings; float leaves
/// were rejected by reject_float_leaves) are piecewise constants of f, so their derivative is
/// zero; they come back value-initialised (0, false, empty string).
template <class T>
T gradient_tree(const T& tree, const Arrays& xs, std::size_t& pos) {
  return tree_map(
      [&](const auto& leaf) {
        using L = std::remove_cvref_t<decltype(leaf)>;
        if constexpr (is_array_v<L>) return xs.at(pos++);
        else return L{};
      },
      tree);
}

/// Calls f on the argument tuple with its Array leaves replaced by `xs`; returns f's result.
template <class F, class... A>
auto call_with_arrays(F& f, const std::tuple<A...>& args, const Arrays& xs) {
  std::size_t pos = 0;
  auto traced = with_arrays(args, xs, pos);
  return std::apply(f, traced);
}

template <class... A>
Arrays arrays_of(const std::tuple<A...>& args) {
  Arrays xs;
  append_arrays(args, xs);
  return xs;
}

/// JAX's flatten_fun, the one bridge between the caller's pytrees and the flat transform cores:
/// f as a function of the Array leaves of `args` (its other leaves fixed), which keeps f's last
/// result in `result` so that the caller can rebuild that type around new Array leaves.
template <class F, class Args, class R>
FlatFn flatten_fun(F& f, const Args& args, std::optional<R>& result) {
  return [&f, &args, &result](const Arrays& xs) {
    result.emplace(call_with_arrays(f, args, xs));
    Arrays out;
    append_arrays(*result, out);
    return out;
  };
}

}  // namespace canopy::detail
