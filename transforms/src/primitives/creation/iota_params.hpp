// Internal to iota.cpp and the backends: the params of lax.iota.
#pragma once

#include "canopy/dtype.hpp"
#include "canopy/shape.hpp"

namespace canopy::detail {

/// The result's dtype and shape, and the dimension the count runs along (negative: from the end).
struct IotaParams {
  DType dtype = DType::i32;
  Shape shape;
  int dimension = 0;
};

}  // namespace canopy::detail
