// Internal to transforms: GPU verification's check of one kernel call against the CPU kernel
// (verify_against_cpu.cpp), made by the eager interpreter after every kernel it runs on a device
// with memory of its own (a GPU) while gpu_verify() is on.
#pragma once

#include <span>

#include "canopy/array.hpp"
#include "canopy/core/primitive.hpp"

namespace canopy::detail {

/// Runs `p`'s CPU kernel on host copies of `in` and compares its results with `out` (the GPU
/// kernel's) under the tolerance canopy/devices.hpp documents; DeviceMismatchError at the first
/// element beyond it. Device-neutral primitives and collectives are not checked themselves.
void verify_against_cpu(const PrimitiveInfo& p, std::span<const Array> in, std::span<const Array> out,
                        const ParamsRef& params);

}  // namespace canopy::detail
