// conv_general_dilated's geometry as its kernel takes it: what the kernel computes per call and
// what jit's epilogue fusion builds on.
#pragma once

#include "canopy/core/primitive.hpp"
#include "canopy/kernels/nn_geometry.hpp"
#include "canopy/precision.hpp"
#include "canopy/shape.hpp"

namespace canopy::detail {

/// The ConvGeometry of conv_general_dilated[params] on contiguous lhs, rhs and out of these shapes.
kernels::ConvGeometry conv_geometry(const ParamsRef& params, const Shape& lhs, const Shape& rhs, const Shape& out);
/// The precision conv_general_dilated[params] computes at (the higher of its operands').
Precision conv_precision(const ParamsRef& params);
/// The dim of conv_general_dilated[params]'s result that holds its output features.
std::size_t conv_out_feature_dim(const ParamsRef& params);

}  // namespace canopy::detail
