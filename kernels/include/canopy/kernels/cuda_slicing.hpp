// The GPU kernels of dynamic_slice, dynamic_update_slice and pad that read their start indices
// and padding value in device memory, on the device: no host read, so a jitted call using them
// with traced starts or a traced padding value can be recorded as a graph. Raw device pointers,
// as cuda.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "canopy/dtype.hpp"
#include "canopy/shape.hpp"

namespace canopy::kernels::cuda {

/// The window of `out_shape` of `operand` (contiguous, `operand_shape`) into `out` (contiguous),
/// starting along dim d at the integer scalar starts[d] of dtype start_dtypes[d] (device memory),
/// clamped into [0, dim - size] as on the CPU.
void dynamic_slice(std::size_t itemsize, const void* operand, const Shape& operand_shape,
                   std::span<const void* const> starts, std::span<const DType> start_dtypes, void* out,
                   const Shape& out_shape, int device);
/// `operand` (contiguous, `operand_shape`) copied to `out` with `update` (contiguous,
/// `update_shape`) written over the window at the starts (as dynamic_slice's).
void dynamic_update_slice(std::size_t itemsize, const void* operand, const Shape& operand_shape, const void* update,
                          const Shape& update_shape, std::span<const void* const> starts,
                          std::span<const DType> start_dtypes, void* out, int device);
/// Sets n elements of `itemsize` bytes to the element at `value`, in device memory (pad's fill).
void fill_from_device(std::size_t itemsize, const void* value, void* out, std::int64_t n, int device);

}  // namespace canopy::kernels::cuda
