// softmax and log_softmax on cuDNN: cudnnSoftmaxForward, which cuDNN 9 keeps (not deprecated, unlike
// the legacy convolution and pooling calls) and which the graph API has no single operation for.
// The array is read as (outer, n, inner, 1) in NCHW, reduced over C: the axis of length n.
#include <climits>

#include "canopy/kernels/cuda_nn.hpp"
#include "cudnn_backend.hpp"
#include "cudnn_entry.hpp"

namespace canopy::kernels::cuda::cudnn {
namespace {

// An owned legacy tensor descriptor.
struct TensorDescriptor {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDescriptor() { check(cudnnCreateTensorDescriptor(&d), "softmax (cuDNN)"); }
  ~TensorDescriptor() { (void)cudnnDestroyTensorDescriptor(d); }
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
};

}  // namespace

bool softmax(bool log, DType dtype, const void* in, void* out, const Shape& shape, int axis, int device) {
  cudnnDataType_t type{};
  if (!use_cudnn() || !data_type(dtype, type)) return false;
  std::int64_t outer = 1, inner = 1;
  const std::int64_t n = shape[static_cast<std::size_t>(axis)];
  for (int d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  // The legacy descriptors take int extents, and cuDNN indexes these tensors with 32 bits.
  if (outer * n * inner == 0 || outer * n * inner > INT_MAX) return false;
  TensorDescriptor t;
  check(cudnnSetTensor4dDescriptor(t.d, CUDNN_TENSOR_NCHW, type, static_cast<int>(outer), static_cast<int>(n),
                                   static_cast<int>(inner), 1),
        "softmax (cuDNN)");
  // alpha and beta are doubles for double data, floats otherwise.
  const double alpha_d = 1.0, beta_d = 0.0;
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const bool wide = dtype == DType::f64;
  cudnnHandle_t h = handle(device);
  if (!h) return false;
  const cudnnStatus_t status = cudnnSoftmaxForward(
      h, log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL,
      wide ? static_cast<const void*>(&alpha_d) : &alpha_f, t.d, in, wide ? static_cast<const void*>(&beta_d) : &beta_f,
      t.d, out);
  if (status == CUDNN_STATUS_NOT_SUPPORTED) return false;  // e.g. a dtype this cuDNN lacks a kernel for
  check(status, log ? "log_softmax (cuDNN)" : "softmax (cuDNN)");
  count_call();
  return true;
}

}  // namespace canopy::kernels::cuda::cudnn
