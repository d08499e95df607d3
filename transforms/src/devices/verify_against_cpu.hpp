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
/// `summed_by_transform`: whether the kernel may have computed its sums by a transform, which
/// adds the fast-transform allowance; by default, where `p` says it may
/// (PrimitiveInfo::fast_transform_sums) and cuDNN ran the call (kernels::cuda::cudnn_ran_last_conv).
void verify_against_cpu(const PrimitiveInfo& p, std::span<const Array> in, std::span<const Array> out,
                        const ParamsRef& params);
void verify_against_cpu(const PrimitiveInfo& p, std::span<const Array> in, std::span<const Array> out,
                        const ParamsRef& params, bool summed_by_transform);

/// The unit roundoff of the accumulator kernels sum results of dtype d in: f64's for f64, f32's
/// for f32, bf16 and f16.
double accumulator_eps(DType d);

/// How far two correct computations of a sum may differ beyond their final rounding: `terms`
/// terms (products included) whose magnitudes add up to `magnitude`, accumulated with unit
/// roundoff `eps` (accumulator_eps) in any order on each side, each product off by up to
/// `product_error` of its magnitude on one of them (TF32's rounding; 0 for exact products). The
/// reasoning is in verify_against_cpu.cpp; the GPU suite holds whole computations to it too.
double summation_tolerance(double terms, double magnitude, double eps, double product_error = 0);

}  // namespace canopy::detail
