// Tree utilities of the training toolbox: a tree's Array leaves named by key path (the keys of
// checkpoints and summaries), its parameter count, and an indented shape summary.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <canopy/array.hpp>
#include <canopy/array_pytree.hpp>
#include <canopy/pytree.hpp>

namespace canopy {

/// One Array leaf and its key path, written the simple way: `layers/2/b` (jax's
/// `keystr(path, simple=True, separator='/')`); the root leaf is the empty string.
struct NamedArray {
  std::string name;
  Array value;
};
using NamedArrays = std::vector<NamedArray>;

/// jax's `keystr(path, simple=True, separator=sep)`: `layers/2/b`, `opt/0/mu/w`, `["lr"]` → `lr`.
std::string simple_keystr(const KeyPath& path, std::string_view sep = "/");

/// The Array leaves of `tree` in tree_flatten order, each named by simple_keystr. Leaves that are
/// not Arrays (ints, flags, config) are not listed: they belong to the tree's type, not its data.
template <class T>
NamedArrays named_arrays(const T& tree) {
  NamedArrays out;
  tree_map_with_path(
      [&](const KeyPath& path, const auto& leaf) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(leaf)>, Array>) out.push_back({simple_keystr(path), leaf});
        return leaf;
      },
      tree);
  return out;
}

/// `tree` with its Array leaves replaced, in order, by `arrays` (as named_arrays lists them);
/// TreeError if the count differs. The caller checks names, shapes and dtypes.
template <class T>
T replace_arrays(const T& tree, const std::vector<Array>& arrays) {
  std::size_t pos = 0;
  T out = tree_map(
      [&](const auto& leaf) {
        using L = std::remove_cvref_t<decltype(leaf)>;
        if constexpr (std::is_same_v<L, Array>) {
          if (pos >= arrays.size()) return leaf;
          return arrays[pos++];
        } else {
          return leaf;
        }
      },
      tree);
  if (pos != arrays.size() || named_arrays(tree).size() != arrays.size())
    throw TreeError("replace_arrays: the tree has " + std::to_string(named_arrays(tree).size()) + " Array leaves, given " +
                    std::to_string(arrays.size()));
  return out;
}

/// The number of scalars in the Array leaves (bobbin's total_dimensionality).
std::int64_t parameter_count(const NamedArrays& arrays);
/// The bytes of the Array leaves.
std::int64_t parameter_bytes(const NamedArrays& arrays);
/// One line per Array leaf, `layers/0/w  f32[784,512]`, names aligned, then `total: N parameters (B bytes)`.
std::string shape_summary(const NamedArrays& arrays);

template <class T>
std::int64_t parameter_count(const T& tree) {
  return parameter_count(named_arrays(tree));
}
template <class T>
std::int64_t parameter_bytes(const T& tree) {
  return parameter_bytes(named_arrays(tree));
}
template <class T>
std::string shape_summary(const T& tree) {
  return shape_summary(named_arrays(tree));
}

}  // namespace canopy
