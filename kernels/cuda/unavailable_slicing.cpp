// The slicing kernels' entry points in a build without the GPU backend: no cuda:k array exists
// there, so nothing reaches them; they answer with a DeviceError rather than fail to link.
#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_slicing.hpp"

namespace canopy::kernels::cuda {
namespace {
[[noreturn]] void unavailable(const char* api) {
  ::canopy::detail::raise<DeviceError>(api, "cuda:k devices", "", "are not available", unavailable_reason());
}
}  // namespace

void dynamic_slice(std::size_t, const void*, const Shape&, std::span<const void* const>, std::span<const DType>, void*,
                   const Shape&, int) {
  unavailable("dynamic_slice");
}
void dynamic_update_slice(std::size_t, const void*, const Shape&, const void*, const Shape&,
                          std::span<const void* const>, std::span<const DType>, void*, int) {
  unavailable("dynamic_update_slice");
}
void fill_from_device(std::size_t, const void*, void*, std::int64_t, int) { unavailable("pad"); }

}  // namespace canopy::kernels::cuda
