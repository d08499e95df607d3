// The type-erased core of vmap: a function of flat Arrays, each with the axis it is mapped
// over (or none). The pytree layer in <canopy/transforms.hpp> builds these lists from in_axes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "canopy/core/autodiff.hpp"

namespace canopy::detail {

/// What vmap_flat needs besides f and its inputs.
struct VmapSpec {
  std::vector<std::optional<int>> in_axes;   ///< one per input; none = not mapped
  /// One per output (called after f ran, since outputs are known only then); none = the output
  /// must not depend on the batch. Unset: 0 for every output.
  std::function<std::vector<std::optional<int>>()> out_axes;
  std::int64_t axis_size = -1;               ///< -1: taken from the mapped inputs
  std::string axis_name;                     ///< for psum & co (empty: unnamed)
  /// The key paths of the inputs, called only to word an error message.
  std::function<std::vector<std::string>()> in_names;
};

/// Maps f over the given axes: inputs are sliced along in_axes, f sees one example, outputs
/// are stacked along out_axes. Throws ShapeError on inconsistent sizes, naming the inputs.
Arrays vmap_flat(const FlatFn& f, const Arrays& in, const VmapSpec& spec);

/// The axis name of the vmap whose batching rule is running (empty if unnamed or none): rules
/// that vmap a sub-program (scan, while) give it to their inner vmap, so collectives inside the
/// body still find their axis.
std::string_view batching_axis_name();

/// The size of the vmap axis named `axis_name` among the active traces (jax's axis environment),
/// or -1 when no enclosing vmap binds that name. Shape rules of collectives read it.
std::int64_t bound_axis_size(std::string_view axis_name);

}  // namespace canopy::detail
