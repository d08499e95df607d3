// The index arithmetic of the CUDA kernels that walk a shape reading and writing with two sets of
// element strides (binary ops with broadcasting, strided copies, dynamic windows): the geometry
// passed by value into a kernel, an element's two offsets, and the merging of a shape's dims that
// keeps the geometry small. __host__ __device__, so the CPU suite runs it on the host.
#pragma once

#include <cstdint>
#include <span>

#include "canopy/kernels/element_math.hpp"
#include "canopy/shape.hpp"

namespace canopy::kernels::cuda::strided {

/// Dims a geometry holds, after merging.
inline constexpr int kMaxRank = 8;

/// Dims and two sides' element strides (a: read, b: written, or either operand), by value into a kernel.
struct Strides {
  int rank = 0;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t a[kMaxRank] = {};
  std::int64_t b[kMaxRank] = {};
};

/// The offsets on both sides of element i (row-major over the dims).
CANOPY_HD inline void offsets(const Strides& s, std::int64_t i, std::int64_t& oa, std::int64_t& ob) {
  if (s.rank == 1) {  // merged to one dim (contiguous, or against a scalar): no 64-bit division
    oa = i * s.a[0];
    ob = i * s.b[0];
    return;
  }
  oa = 0;
  ob = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const std::int64_t idx = i % s.dims[d];
    i /= s.dims[d];
    oa += idx * s.a[d];
    ob += idx * s.b[d];
  }
}

/// `shape` walked with a_strides and b_strides, unit dims dropped (their strides never matter) and
/// each dim merged into the one before where both sides stay affine; false when more than
/// kMaxRank dims remain.
inline bool merged(const Shape& shape, std::span<const std::int64_t> a_strides, std::span<const std::int64_t> b_strides,
                   Strides& st) {
  st = Strides{};
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (st.rank > 0 && st.a[st.rank - 1] == a_strides[d] * shape[d] && st.b[st.rank - 1] == b_strides[d] * shape[d]) {
      st.dims[st.rank - 1] *= shape[d];
      st.a[st.rank - 1] = a_strides[d];
      st.b[st.rank - 1] = b_strides[d];
      continue;
    }
    if (st.rank == kMaxRank) return false;
    st.dims[st.rank] = shape[d];
    st.a[st.rank] = a_strides[d];
    st.b[st.rank] = b_strides[d];
    ++st.rank;
  }
  return true;
}

}  // namespace canopy::kernels::cuda::strided
