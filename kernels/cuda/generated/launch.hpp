// Internal to kernels/cuda: fused_elementwise's generated-kernel path (launch.cpp).
#pragma once

#include <cstdint>
#include <span>

#include "canopy/kernels/fused_program.hpp"

namespace canopy::kernels::cuda::detail {

/// Runs `program` as its generated kernel on `device`'s stream and returns true; false (having
/// run nothing) where generated kernels are off, the program is not one the generator writes, or
/// no kernel could be had (NVRTC missing, a compile or load failure: counted by
/// generated_kernel_fallbacks()), and the caller runs the interpreter kernel.
bool launch_generated_fused(const FusedProgram& program, std::span<const void* const> in,
                            std::span<void* const> out, std::int64_t n, int device);

/// fused_elementwise_segments as one launch of its generated kernel, as launch_generated_fused
/// (element by element where the segments' operands are not all laid out alike, as fused_layout
/// sees them); false also where there are more segments than one launch takes.
bool launch_generated_segments(std::span<const FusedProgram* const> programs, std::span<const void* const> in,
                               std::span<void* const> out, int device);

}  // namespace canopy::kernels::cuda::detail
