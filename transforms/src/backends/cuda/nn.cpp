// The CUDA backend's neural-network kernels: windowed reductions (pooling) and their derivatives'
// select_and_* steps, softmax and log_softmax (kernels/cuda/nn.cu, reduce.cu, cuDNN).
#include "../../primitives/common.hpp"
#include "../../primitives/nn/softmax_params.hpp"
#include "../../primitives/window/geometry.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_nn.hpp"

namespace canopy::detail {
namespace {

template <kernels::WindowOp op>
void reduce_window(std::span<const Array> in, std::span<Array> out, const WindowParams& params) {
  kernels::cuda::reduce_window(op, in[0].dtype(), cdata(in[0]), mutable_data(out[0]), window_geometry(in[0], out[0], params),
                               gpu_of(out[0]));
}

void select_and_gather_add(std::span<const Array> in, std::span<Array> out, const WindowParams& params) {
  kernels::cuda::select_and_gather_add(in[0].dtype(), cdata(in[0]), cdata(in[1]), mutable_data(out[0]),
                                       window_geometry(in[1], out[0], params), gpu_of(out[0]));
}

void select_and_scatter_add(std::span<const Array> in, std::span<Array> out, const WindowParams& params) {
  kernels::cuda::select_and_scatter_add(in[0].dtype(), cdata(in[0]), cdata(in[1]), mutable_data(out[0]),
                                        window_geometry(in[1], in[0], params), gpu_of(out[0]));
}

template <bool log>
void softmax(std::span<const Array> in, std::span<Array> out, const SoftmaxParams& params) {
  const int axis = normalize_axis(log ? "log_softmax" : "softmax", params.axis, in[0].ndim(), in[0].aval());
  kernels::cuda::softmax(log, in[0].dtype(), cdata(in[0]), mutable_data(out[0]), in[0].shape(), axis, gpu_of(out[0]));
}

using kernels::WindowOp;
[[maybe_unused]] const bool registered = register_kernels(Device::Kind::cuda, {
    typed_kernel<WindowParams, reduce_window<WindowOp::max>>("reduce_window_max"),
    typed_kernel<WindowParams, reduce_window<WindowOp::sum>>("reduce_window_sum"),
    typed_kernel<WindowParams, select_and_gather_add>("select_and_gather_add"),
    typed_kernel<WindowParams, select_and_scatter_add>("select_and_scatter_add"),
    typed_kernel<SoftmaxParams, softmax<false>>("softmax"),
    typed_kernel<SoftmaxParams, softmax<true>>("log_softmax"),
});

}  // namespace
}  // namespace canopy::detail
