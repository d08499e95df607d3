// The CPU data-movement kernels of the slicing and indexing primitives: strided-to-strided copies
// (slice, pad, concatenate, dynamic_update_slice), fills, and window gather/scatter driven by
// offset tables the primitive precomputes. Raw pointers only: primitives validate shapes first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "canopy/dtype.hpp"
#include "canopy/kernels/ops.hpp"  // ScatterOp

namespace canopy::kernels::cpu {

/// For every index i of `shape`: out[sum i*out_strides] = in[sum i*in_strides] (strides in elements,
/// any sign; 0 broadcasts the source).
void copy_strided(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides,
                  std::span<const std::int64_t> shape, void* out, std::span<const std::int64_t> out_strides);

/// Sets n elements of `out` to the single element at `value`.
void fill(std::size_t itemsize, const void* value, void* out, std::int64_t n);

/// Window gather. For each batch b and window element w:
/// out[out_batch[b] + out_window[w]] = in_batch[b] < 0 ? *fill_value : in[in_batch[b] + in_window[w]].
void gather_windows(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_batch,
                    std::span<const std::int64_t> in_window, const void* fill_value, void* out,
                    std::span<const std::int64_t> out_batch, std::span<const std::int64_t> out_window);

/// Window scatter, in place on `operand`, batches in increasing order (so for `set` the last
/// duplicate wins). For each batch b with op_batch[b] >= 0 and each window element w:
/// operand[op_batch[b] + op_window[w]] = op(that element, updates[upd_batch[b] + upd_window[w]]).
void scatter_windows(ScatterOp op, DType dtype, const void* updates, std::span<const std::int64_t> upd_batch,
                     std::span<const std::int64_t> upd_window, void* operand, std::span<const std::int64_t> op_batch,
                     std::span<const std::int64_t> op_window);

}  // namespace canopy::kernels::cpu
