// jit's fused elementwise programs on the GPU: one kernel launch per program, each thread
// running fused_element over its elements (the program, flattened, and the operand pointers go
// to the device in one small block; stream order keeps it alive for the kernel).
#include <cstring>
#include <vector>

#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "fused_math.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
namespace {

struct FusedLaunch {
  FusedView program;
  const void* in[kMaxFusedInputs];
  void* out[kMaxFusedOutputs];
};

__global__ void fused_kernel(const FusedLaunch* launch, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    fused_element(launch->program, launch->in, launch->out, i);
}

}  // namespace

bool fused_supported(const cpu::FusedProgram& program) { return fused_view_supported(program); }

void fused_elementwise(const cpu::FusedProgram& program, std::span<const void* const> in, std::span<void* const> out,
                       std::int64_t n, int device) {
  if (!fused_view_supported(program))
    ::canopy::detail::raise<DeviceError>("fused_elementwise", "program", "", "has steps the GPU kernel does not run",
                                         "jit builds GPU programs without them");
  if (n == 0) return;
  auto launch = std::make_shared<FusedLaunch>();
  launch->program = fused_view(program);
  for (std::size_t k = 0; k < in.size(); ++k) launch->in[k] = in[k];
  for (std::size_t k = 0; k < out.size(); ++k) launch->out[k] = out[k];
  std::shared_ptr<Buffer> block = allocate(sizeof(FusedLaunch), device);
  copy_to_device(launch.get(), block->data(), sizeof(FusedLaunch), device);
  fused_kernel<<<detail::blocks_for(n), detail::kThreads, 0, detail::stream(device)>>>(
      static_cast<const FusedLaunch*>(block->data()), n);
  detail::check_launch("fused_elementwise");
}

}  // namespace canopy::kernels::cuda
