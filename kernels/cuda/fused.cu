// jit's fused elementwise programs on the GPU: one kernel launch per program, as the program's
// generated kernel (generated/, compiled by NVRTC) where there is one, else as this interpreter:
// each thread running fused_element over its elements (fused_row over its rows, for a program
// with row sums or log_softmax steps). The flattened program and the operand pointers go to
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

// A program with row sums or row steps: a thread per row.
__global__ void fused_rows_kernel(const FusedLaunch launch, std::int64_t rows) {
  CANOPY_GRID_LOOP(row, rows) fused_row(launch.program, launch.in, launch.out, row);
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
  if (launch.program.row > 0) {
    const std::int64_t rows = n / launch.program.row;
    fused_rows_kernel<<<detail::blocks_for(rows), detail::kThreads, 0, detail::stream(device)>>>(launch, rows);
  } else {
    fused_kernel<<<detail::blocks_for(n), detail::kThreads, 0, detail::stream(device)>>>(launch, n);
  }
  detail::check_launch("fused_elementwise");
}

void fused_elementwise_segments(std::span<const FusedProgram* const> programs, std::span<const void* const> in,
                                std::span<void* const> out, int device) {
  if (programs.empty()) return;
  for (const FusedProgram* p : programs)
    if (p->inputs.size() != programs[0]->inputs.size() || p->outputs.size() != programs[0]->outputs.size())
      ::canopy::detail::raise<DeviceError>("fused_elementwise_segments", "programs", "",
                                           "differ in their operands", "every segment runs one program");
  if (in.size() != programs.size() * programs[0]->inputs.size() || out.size() != programs.size() * programs[0]->outputs.size())
    ::canopy::detail::raise<DeviceError>("fused_elementwise_segments", "operands", "",
                                         "are not the segments' inputs and outputs, one segment after another", "");
  if (detail::launch_generated_segments(programs, in, out, device)) return;
  const std::size_t ni = programs[0]->inputs.size(), no = programs[0]->outputs.size();
  for (std::size_t k = 0; k < programs.size(); ++k)
    fused_elementwise(*programs[k], in.subspan(k * ni, ni), out.subspan(k * no, no), programs[k]->elements, device);
}

}  // namespace canopy::kernels::cuda
