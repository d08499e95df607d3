// Internal to kernels/cuda: CUDA C++ for a scalar program (scalar_program.hpp), compiled by NVRTC
// into a kernel whose one thread runs every step: a GPU program's one-element steps in one launch.
// Pure host code: the tests generate and compile sources on machines without a GPU.
#pragma once

#include <string>

#include "canopy/kernels/scalar_program.hpp"

namespace canopy::kernels::cuda::generated {

/// The kernel's name in the compiled module.
inline constexpr const char* kScalarKernelName = "canopy_scalar_kernel";

/// Whether a kernel can be generated for `p`: every value of a dtype scalar_program_dtype takes,
/// every operand number a value defined before its step, selects of a bool or i32 index.
bool scalar_generated_supported(const ScalarProgram& p);

/// The generated part of the source (scalar_generated_supported(p) must hold): in namespace
/// canopy_scalar, `struct Args` (the inputs' addresses, then one output address per step) and
/// `run(args)`, which reads the inputs, computes each step with the library's element math
/// (math::unary / binary / compare / convert of element_math.hpp, as the elementwise kernels call
/// it for that dtype, but f32 math in f64 rounded once) and writes every step's value. Declared CANOPY_FUSED_FN, which the including
/// source defines (a device function under NVRTC; `inline` where the tests compile it for the host).
std::string scalar_kernel_body(const ScalarProgram& p);

/// The whole source NVRTC compiles: the embedded headers (nvrtc_prelude), the body and the
/// __global__ kScalarKernelName(Args), which one thread runs.
std::string scalar_kernel_source(const ScalarProgram& p);

/// An exact key of what the source depends on, for the cache of loaded kernels.
std::string scalar_program_key(const ScalarProgram& p);

}  // namespace canopy::kernels::cuda::generated
