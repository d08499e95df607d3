// Internal to softmax.cpp, log_softmax.cpp and the backends: the params the two share.
#pragma once

namespace canopy::detail {

/// The axis the rows run along (non-negative after the public op normalises it).
struct SoftmaxParams {
  int axis = -1;
};

}  // namespace canopy::detail
