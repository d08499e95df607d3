// The GPU kernels of the indexing primitives: cpu_indexing.hpp's window gather and scatter, driven
// by the same offset tables (host memory; the kernels copy them to `device`) with the windows'
// starts read from the indices on the device, and sort's rows. Raw device pointers, as cuda.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "canopy/dtype.hpp"
#include "canopy/kernels/ops.hpp"
#include "canopy/kernels/window_start.hpp"

namespace canopy::kernels::cuda {

/// Window gather (cpu::gather_windows) on `device`, out_batch.size() windows whose starts are read
/// on the device from `indices` (device memory, of integer `index_dtype`) through `starts` (host
/// tables, copied to the device with the others); `fill_value` is one element in host memory.
void gather_windows(std::size_t itemsize, const void* in, const void* indices, DType index_dtype,
                    const WindowBounds& starts, std::span<const std::int64_t> in_window, const void* fill_value, void* out,
                    std::span<const std::int64_t> out_batch, std::span<const std::int64_t> out_window, int device);

/// Window scatter (cpu::scatter_windows), in place on `operand` (of `operand_size` elements) on
/// `device`, upd_batch.size() windows whose starts are read on the device from `indices` through
/// `starts`, as gather_windows's. Where windows overlap, `set` keeps the last batch's update and
/// `add` sums in batch order, as on the CPU, bit for bit.
void scatter_windows(ScatterOp op, DType dtype, const void* updates, std::span<const std::int64_t> upd_batch,
                     std::span<const std::int64_t> upd_window, void* operand, std::int64_t operand_size,
                     const void* indices, DType index_dtype, const WindowBounds& starts,
                     std::span<const std::int64_t> op_window, int device);

/// sort's kernel: each of `rows` rows of `len` elements of every operand (rows x len, contiguous)
/// reordered into `out` by a stable sort on the first `num_keys` operands, lexicographically, in
/// JAX's total order (-0.0 == 0.0, NaNs last).
void sort_rows(std::span<const void* const> operands, std::span<const DType> dtypes, int num_keys, std::int64_t rows,
               std::int64_t len, std::span<void* const> out, int device);

}  // namespace canopy::kernels::cuda
