// The bridge between the caller's pytrees and the flat Array lists of the transforms' cores:
// collect a tree's Array leaves in order, and rebuild a tree of the same type from new Arrays.
// Leaves that are not Arrays (ints, flags, config) are not transformed: they pass through.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>

#include "canopy/array_pytree.hpp"
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

/// with_arrays for a gradient: leaves that are not Arrays are constants of f, so their
/// derivative is zero; they come back value-initialised (0, false, empty string).
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

}  // namespace canopy::detail
