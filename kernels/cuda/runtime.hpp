// Internal to kernels/cuda: the device's stream and library handles, error checks, launch sizes.
#pragma once

#include <cstdint>
#include <string_view>

#include <cuda_runtime_api.h>

namespace canopy::kernels::cuda::detail {

/// Makes `device` current on the calling thread and returns its stream (created on first use;
/// one per device: every kernel and copy for the device is ordered on it). DeviceError for a
/// device this process does not have.
cudaStream_t stream(int device);
/// DeviceError naming `api` and CUDA's message for a failed call; ResourceError for out of memory.
void check(cudaError_t status, std::string_view api);
/// check(cudaGetLastError()) after a kernel launch.
void check_launch(std::string_view api);

/// Threads per block of the elementwise kernels.
inline constexpr int kThreads = 256;
/// Blocks for n elements with a grid-stride loop (capped: each thread then takes several).
inline unsigned blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 16 ? 65535 * 16 : b));
}

}  // namespace canopy::kernels::cuda::detail

/// A grid-stride loop over [0, n): each thread takes i = its global index, then strides by the
/// grid's size.
#define CANOPY_GRID_LOOP(i, n) \
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < (n); i += std::int64_t(gridDim.x) * blockDim.x)
