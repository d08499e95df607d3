// The CPU kernels of the neural-network primitives: convolution, windowed reductions (pooling)
// and softmax. Raw pointers plus geometry (nn_geometry.hpp) only; the primitives validate shapes
// and dtypes first. f32 runs on cached oneDNN primitives where oneDNN has one; the rest on plain
// loops.
#pragma once

#include <span>

#include "canopy/dtype.hpp"
#include "canopy/kernels/cpu.hpp"
#include "canopy/kernels/nn_geometry.hpp"
#include "canopy/shape.hpp"

namespace canopy::kernels::cpu {

/// out = conv(lhs, rhs); dtype f32 (oneDNN when it applies), f64 or bf16 (loops).
void conv(DType dtype, const void* lhs, const void* rhs, void* out, const ConvGeometry& g);
/// f32 `conv` with `epilogue` applied to every result (as matmul_f32_epilogue; operands[i] is the
/// i-th binary step's operand, a row being one value per output channel). The output's channels
/// must be its innermost dimension (out_strides[1] == 1): without oneDNN post-ops the steps run
/// over it as rows of channels.
void conv_f32_epilogue(const float* lhs, const float* rhs, float* out, const ConvGeometry& g,
                       std::span<const EpilogueStep> epilogue, std::span<const float* const> operands);
/// The plain-loop convolution (exposed so tests and the f32 fallback share one reference path).
void conv_loop(DType dtype, const void* lhs, const void* rhs, void* out, const ConvGeometry& g);

/// out = reduce_window(in); padding contributes the identity (-inf / lowest for max, 0 for sum).
void reduce_window(WindowOp op, DType dtype, const void* in, void* out, const WindowGeometry& g);

/// Max pooling's derivative (XLA's select_and_gather_add and select_and_scatter_add): window i of
/// `operand` selects its first maximal element in window order, or nothing when that maximum is
/// padding or the window holds a NaN (as reduce_window max's result then matches no element).
/// Gather: out[i] = tangent at window i's selection (0 for nothing); tangent has operand's shape,
/// out the windows' shape `g.out`. Floating-point dtypes.
void select_and_gather_add(DType dtype, const void* tangent, const void* operand, void* out, const WindowGeometry& g);
/// Scatter: out (operand's shape) = 0, then source[i] (the windows' shape) added at window i's
/// selection. Floating-point dtypes.
void select_and_scatter_add(DType dtype, const void* source, const void* operand, void* out, const WindowGeometry& g);

/// Softmax (or log-softmax) of a row-major array along `axis`, max-subtracted.
void softmax(DType dtype, bool log, const void* in, void* out, const Shape& shape, int axis);

}  // namespace canopy::kernels::cpu
