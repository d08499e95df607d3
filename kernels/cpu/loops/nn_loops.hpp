// Internal to kernels/cpu: the plain-loop halves of the nn kernels, which the oneDNN halves
// (onednn/conv.cpp, pool.cpp, softmax.cpp) fall back to when oneDNN does not apply.
#pragma once

#include "canopy/kernels/cpu_nn.hpp"

namespace canopy::kernels::cpu::loops {

/// reduce_window on plain loops, any dtype and geometry.
void reduce_window(WindowOp op, DType dtype, const void* in, void* out, const WindowGeometry& g);
/// Softmax along `axis` on plain loops; f64 in double, f32/bf16 in float.
void softmax(DType dtype, bool log, const void* in, void* out, const Shape& shape, int axis);

}  // namespace canopy::kernels::cpu::loops
