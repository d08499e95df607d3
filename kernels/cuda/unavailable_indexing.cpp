// The indexing kernels' entry points in a build without the GPU backend: no cuda:k array exists
// there, so nothing reaches them; they answer with a DeviceError rather than fail to link.
#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_indexing.hpp"

namespace canopy::kernels::cuda {
namespace {
[[noreturn]] void unavailable(const char* api) {
  ::canopy::detail::raise<DeviceError>(api, "cuda:k devices", "", "are not available", unavailable_reason());
}
}  // namespace

void gather_windows(std::size_t, const void*, const void*, DType, const WindowBounds&, std::span<const std::int64_t>,
                    const void*, void*,
                    std::span<const std::int64_t>, std::span<const std::int64_t>, int) {
  unavailable("gather");
}
void scatter_windows(ScatterOp, DType, const void*, std::span<const std::int64_t>, std::span<const std::int64_t>, void*,
                     std::int64_t, const void*, DType, const WindowBounds&, std::span<const std::int64_t>, int) {
  unavailable("scatter");
}
void sort_rows(std::span<const void* const>, std::span<const DType>, int, std::int64_t, std::int64_t,
               std::span<void* const>, int) {
  unavailable("sort");
}

}  // namespace canopy::kernels::cuda
