// The geometry of the neural-network kernels, as both backends take it: one convolution
// (ConvGeometry) and one windowed reduction (WindowOp, WindowGeometry), each in element counts and
// strides. The primitives build them; the CPU's kernels are in cpu_nn.hpp, the GPU's in cuda_nn.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "canopy/shape.hpp"

namespace canopy::kernels {

/// One convolution, lax.conv_general_dilated semantics, in logical (N, C, spatial...) order.
/// Every tensor is read/written through element strides, so any dimension layout needs no copy.
struct ConvGeometry {
  std::int64_t batch = 0, in_features = 0, out_features = 0, groups = 1;
  /// Per spatial dimension (all of the same length, the spatial rank).
  std::vector<std::int64_t> in_size, window, out_size, strides, pad_lo, pad_hi, lhs_dilation, rhs_dilation;
  /// Element strides: lhs in (N, C, spatial...), rhs in (O, I, spatial...), out in (N, C, spatial...).
  std::vector<std::int64_t> lhs_strides, rhs_strides, out_strides;
};

/// Windowed reductions (lax.reduce_window_max / reduce_window_sum).
enum class WindowOp : std::uint8_t { max, sum };
/// Geometry of a reduce_window over a row-major array: one entry per dimension.
struct WindowGeometry {
  Shape in, out;
  std::vector<std::int64_t> window, strides, pad_lo, pad_hi, base_dilation, window_dilation;
};

}  // namespace canopy::kernels
