// The nn kernels' entry points in a build without CUDA: no cuda:k array exists there, so they
// are never reached; they answer with a DeviceError rather than fail to link.
#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_nn.hpp"

namespace canopy::kernels::cuda {
namespace {
[[noreturn]] void unavailable(const char* api) {
  ::canopy::detail::raise<DeviceError>(api, "cuda:k devices", "", "are not available", unavailable_reason());
}
}  // namespace

void conv(DType, const void*, const void*, void*, const ConvGeometry&, int, Precision) {
  unavailable("conv_general_dilated");
}
void reduce_window(WindowOp, DType, const void*, void*, const WindowGeometry&, int) {
  unavailable("reduce_window");
}
void select_and_gather_add(DType, const void*, const void*, void*, const WindowGeometry&, int) {
  unavailable("select_and_gather_add");
}
void select_and_scatter_add(DType, const void*, const void*, void*, const WindowGeometry&, int) {
  unavailable("select_and_scatter_add");
}

}  // namespace canopy::kernels::cuda
