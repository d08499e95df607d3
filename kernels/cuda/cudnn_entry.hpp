// Internal to kernels/cuda: the cuDNN paths the kernels try first (cudnn_conv.cpp,
// cudnn_softmax.cpp; without_cudnn.cpp in a build without cuDNN). Each returns false, having done
// nothing, where cuDNN is off or has no plan; the caller then runs canopy's direct kernel.
// Declared apart from cudnn_backend.hpp so that nvcc-compiled files need no cuDNN header.
#pragma once

#include "canopy/dtype.hpp"
#include "canopy/kernels/cuda_nn.hpp"
#include "canopy/kernels/nn_geometry.hpp"
#include "canopy/shape.hpp"

namespace canopy::kernels::cuda::cudnn {

bool conv(DType dtype, const void* lhs, const void* rhs, void* out, const ConvGeometry& g, int device,
          Precision precision);
bool softmax(bool log, DType dtype, const void* in, void* out, const Shape& shape, int axis, int device);
/// Counts one call run on cuDNN (cuda_nn.hpp's cudnn_calls); a convolution by its operation too.
void count_call();
void count_conv_call(CudnnConv kind);
/// Counts one convolution and bias run as one cuDNN graph (cuda_nn.hpp's cudnn_conv_bias_calls);
/// its convolution is counted by count_conv_call too.
void count_conv_bias_call();


}  // namespace canopy::kernels::cuda::cudnn
