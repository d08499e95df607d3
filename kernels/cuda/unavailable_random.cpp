// The PRNG kernels' entry points in a build without the GPU backend: no cuda:k array exists
// there, so nothing reaches them; they answer with a DeviceError rather than fail to link.
#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_random.hpp"

namespace canopy::kernels::cuda {
namespace {
[[noreturn]] void unavailable(const char* api) {
  ::canopy::detail::raise<DeviceError>(api, "cuda:k devices", "", "are not available", unavailable_reason());
}
}  // namespace

void threefry2x32(const std::uint32_t*, const std::uint32_t*, const std::uint32_t*, const std::uint32_t*, std::uint32_t*,
                  std::uint32_t*, std::int64_t, int) {
  unavailable("threefry2x32");
}
void random_split(const std::uint32_t*, std::int64_t, std::uint32_t*, std::int64_t, random::Layout, int) {
  unavailable("random_split");
}
void random_fold_in(const std::uint32_t*, const std::uint32_t*, std::uint32_t*, std::int64_t, int) {
  unavailable("random_fold_in");
}
void random_bits(const std::uint32_t*, std::int64_t, DType, void*, std::int64_t, random::Layout, int) {
  unavailable("random_bits");
}
void random_uniform01(const std::uint32_t*, std::int64_t, DType, void*, std::int64_t, random::Layout, int) {
  unavailable("random_uniform01");
}

}  // namespace canopy::kernels::cuda
