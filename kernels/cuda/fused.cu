// jit's fused elementwise programs on the GPU: one kernel launch per program, as the program's
// generated kernel (generated/, compiled by NVRTC) where there is one, else as this interpreter:
// each thread running fused_element over its elements. The flattened program and the operand pointers go to
// the kernel as its by-value parameter (kernel parameter space, read by every thread), so a
// launch allocates and copies nothing.
#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "fused_math.hpp"
#include "generated/launch.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
namespace {

struct FusedLaunch {
  FusedView program;
  const void* in[kMaxFusedInputs];
  void* out[kMaxFusedOutputs];
};
// CUDA's limit on a kernel's parameters (4 KiB on every architecture canopy builds for).
static_assert(sizeof(FusedLaunch) <= 4096, "a fused program must fit in a kernel's parameters");

__global__ void fused_kernel(const FusedLaunch launch, std::int64_t n) {
  CANOPY_GRID_LOOP(i, n) fused_element(launch.program, launch.in, launch.out, i);
}

}  // namespace

bool fused_supported(const FusedProgram& program) { return fused_view_supported(program); }

void fused_elementwise(const FusedProgram& program, std::span<const void* const> in, std::span<void* const> out,
                       std::int64_t n, int device) {
  if (!fused_view_supported(program))
    ::canopy::detail::raise<DeviceError>("fused_elementwise", "program", "", "has steps the GPU kernel does not run",
                                         "jit builds GPU programs without them");
  if (n == 0) return;
  if (detail::launch_generated_fused(program, in, out, n, device)) return;
  FusedLaunch launch{fused_view(program), {}, {}};
  for (std::size_t k = 0; k < in.size(); ++k) launch.in[k] = in[k];
  for (std::size_t k = 0; k < out.size(); ++k) launch.out[k] = out[k];
  fused_kernel<<<detail::blocks_for(n), detail::kThreads, 0, detail::stream(device)>>>(launch, n);
  detail::check_launch("fused_elementwise");
}

}  // namespace canopy::kernels::cuda
