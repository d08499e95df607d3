// Where a gather's or scatter's window starts in its operand, read from the window's index vector:
// one definition for the CPU's offset tables and for the GPU kernels, which read the index values
// in device memory (no host round trip, so a jitted step holding a gather can be a CUDA graph).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "canopy/dtype.hpp"
#include "canopy/kernels/hd.hpp"

namespace canopy::kernels {

/// Element i of an integer index array of `dtype` as int64. A u64 beyond int64's range saturates:
/// it is out of range of any operand either way.
CANOPY_HD inline std::int64_t index_at(DType dtype, const void* data, std::int64_t i) {
  switch (dtype) {
    case DType::i32: return static_cast<const std::int32_t*>(data)[i];
    case DType::u32: return static_cast<const std::uint32_t*>(data)[i];
    case DType::i64: return static_cast<const std::int64_t*>(data)[i];
    case DType::u64: {
      const std::uint64_t v = static_cast<const std::uint64_t*>(data)[i];
      constexpr auto top = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
      return static_cast<std::int64_t>(v < top ? v : top);
    }
    case DType::u8: return static_cast<const std::uint8_t*>(data)[i];
    case DType::i8: return static_cast<const std::int8_t*>(data)[i];
    case DType::u16: return static_cast<const std::uint16_t*>(data)[i];
    case DType::i16: return static_cast<const std::int16_t*>(data)[i];
    default: return 0;  // abstract_eval admits integer indices only
  }
}

/// How the windows' starts are read from index vectors of length `k` (window b's at element b * k
/// of `indices`): value j goes along an operand dimension whose starts lie in [0, bound[j]]
/// (bound[j] < 0: no window fits along it) and is scaled by that dimension's stride[j].
struct WindowStartMap {
  const void* indices = nullptr;
  DType dtype = DType::i32;
  std::int64_t k = 0;
  const std::int64_t* bound = nullptr;
  const std::int64_t* stride = nullptr;
  bool clip = false;

  /// The operand offset of window b's first element. A start outside its bounds is clamped into
  /// them when `clip`; otherwise (or where no window fits) the window is -1: filled by gather,
  /// dropped by scatter (lax's GatherScatterMode).
  CANOPY_HD std::int64_t operator()(std::int64_t b) const {
    std::int64_t offset = 0;
    for (std::int64_t j = 0; j < k; ++j) {
      std::int64_t s = index_at(dtype, indices, b * k + j);
      const std::int64_t hi = bound[j];
      if (s < 0 || s > hi) {
        if (!clip || hi < 0) return -1;
        s = s < 0 ? 0 : hi;
      }
      offset += s * stride[j];
    }
    return offset;
  }
};

/// The tables of a WindowStartMap in host memory, from a gather's or scatter's dimension numbers:
/// windows of some extent start at indices[b, j] along operand dim dim_map[j] (0 along the
/// others), each start in [0, bound[j]] (shape - extent) and scaled by stride[j].
struct WindowBounds {
  std::vector<std::int64_t> bound, stride;
  bool clip = false;
  /// Every window one element long along each indexed dim: two windows (equal in extent) are then
  /// the same elements or share none (a GPU scatter then sorts its windows, not their elements).
  bool disjoint_unless_equal = false;
  /// The map over index vectors at `indices` (of `dtype`) reading these tables where they are:
  /// here, or at device copies `bound_at` and `stride_at`.
  WindowStartMap map(const void* indices, DType dtype) const { return map(indices, dtype, bound.data(), stride.data()); }
  WindowStartMap map(const void* indices, DType dtype, const std::int64_t* bound_at, const std::int64_t* stride_at) const {
    return {indices, dtype, static_cast<std::int64_t>(bound.size()), bound_at, stride_at, clip};
  }
};

}  // namespace canopy::kernels
