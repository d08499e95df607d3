// What one element of the GPU's dynamic_slice and dynamic_update_slice kernels is: the window's
// offset from start indices read where they lie (each an integer scalar of its own dtype, clamped
// as the CPU clamps them) and the element pairs a window copy moves. Written as __host__
// __device__ functions so that the CPU suite runs them on the host against the CPU kernels
// (tests/cuda_slicing_test.cpp); kernels/cuda/slicing.cu runs them on the device, reading the
// starts in device memory without a host read (a jitted call with traced starts can be a graph).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "canopy/dtype.hpp"
#include "canopy/kernels/element_math.hpp"
#include "canopy/kernels/window_start.hpp"  // index_at
#include "canopy/shape.hpp"
#include "strided_math.hpp"

namespace canopy::kernels::cuda::slicing {

/// Dims a window copy takes after unit dims are dropped and contiguous runs merged.
inline constexpr int kMaxWindowRank = strided::kMaxRank;

/// One dim's share of a window's offset: its start at `at` (dtype `dtype`) clamped into
/// [0, limit] (limit = dim - window size, so that the window lands whole, as XLA clamps) times
/// the operand's element stride along the dim.
struct StartTerm {
  const void* at = nullptr;
  DType dtype = DType::i32;
  std::int64_t limit = 0;
  std::int64_t stride = 0;
};

/// The window's element offset in the operand: the sum of the terms' clamped starts times strides.
CANOPY_HD inline std::int64_t window_offset(const StartTerm* terms, int count) {
  std::int64_t off = 0;
  for (int k = 0; k < count; ++k) {
    const std::int64_t s = index_at(terms[k].dtype, terms[k].at, 0);  // widened; a u64 past int64 saturates
    off += (s < 0 ? 0 : (s > terms[k].limit ? terms[k].limit : s)) * terms[k].stride;
  }
  return off;
}

/// The terms of a window of `window_shape` in an operand of `operand_shape` (contiguous) whose
/// start along dim d is the scalar at starts[d] of dtype dtypes[d]. Dims where the window spans
/// the operand (limit 0) contribute nothing and are left out.
inline std::vector<StartTerm> start_terms(const Shape& operand_shape, const Shape& window_shape,
                                          std::span<const void* const> starts, std::span<const DType> dtypes) {
  std::vector<StartTerm> terms;
  const Shape strides = contiguous_strides(operand_shape);
  for (std::size_t d = 0; d < operand_shape.size(); ++d)
    if (const std::int64_t limit = operand_shape[d] - window_shape[d]; limit > 0)
      terms.push_back({starts[d], dtypes[d], limit, strides[d]});
  return terms;
}

/// A window copy's geometry, by value into a kernel: its dims, and per dim the element stride in
/// the operand (a: from the window's offset) and in the dense side (b: the slice, or the update).
using WindowCopy = strided::Strides;

/// The geometry of a window of `window_shape` in a contiguous operand of `operand_shape`, with unit
/// dims dropped and contiguous runs merged; false when more than kMaxWindowRank dims remain.
inline bool window_copy(const Shape& operand_shape, const Shape& window_shape, WindowCopy& g) {
  return strided::merged(window_shape, contiguous_strides(operand_shape), contiguous_strides(window_shape), g);
}

/// dynamic_slice's element i: out[dense] = operand[offset + operand position].
template <class W>
CANOPY_HD inline void slice_element(const WindowCopy& g, std::int64_t i, std::int64_t offset, const W* operand, W* out) {
  std::int64_t o, d;
  strided::offsets(g, i, o, d);
  out[d] = operand[offset + o];
}

/// dynamic_update_slice's element i: out[offset + operand position] = update[dense] (out already
/// holds the operand).
template <class W>
CANOPY_HD inline void update_element(const WindowCopy& g, std::int64_t i, std::int64_t offset, const W* update, W* out) {
  std::int64_t o, d;
  strided::offsets(g, i, o, d);
  out[offset + o] = update[d];
}

}  // namespace canopy::kernels::cuda::slicing
