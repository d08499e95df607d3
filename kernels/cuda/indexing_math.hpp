// What one element of the GPU indexing kernels is (gather's copy or fill, scatter's combine, sort's
// comparison in JAX's total order), as __host__ __device__ functions that the CUDA kernels run and
// the CPU test suite runs for the host against the CPU kernels (tests/cuda_indexing_test.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "canopy/kernels/element_math.hpp"
#include "canopy/kernels/ops.hpp"

namespace canopy::kernels::cuda::indexing {

/// Element t (batch t / nw, window element t % nw) of a window gather, window b starting at
/// in_start(b) (a kernels::WindowStartMap over the indices, or a table):
/// out[out_batch[b] + out_window[w]] = in_start(b) < 0 ? fill : in[in_start(b) + in_window[w]].
template <class W, class Starts>
CANOPY_HD inline void gather_element(std::int64_t t, std::int64_t nw, const W* in, const Starts& in_start,
                                     const std::int64_t* in_window, W fill, W* out, const std::int64_t* out_batch,
                                     const std::int64_t* out_window) {
  const std::int64_t b = t / nw, w = t - b * nw;
  const std::int64_t base = in_start(b);
  out[out_batch[b] + out_window[w]] = base < 0 ? fill : in[base + in_window[w]];
}

/// Where element t of a window scatter lands in the operand (window b starting at op_start(b)),
/// or -1 for a dropped window.
template <class Starts>
CANOPY_HD inline std::int64_t scatter_target(std::int64_t t, std::int64_t nw, const Starts& op_start,
                                             const std::int64_t* op_window) {
  const std::int64_t b = t / nw, start = op_start(b);
  return start < 0 ? -1 : start + op_window[t - b * nw];
}
/// The update element t of a window scatter reads.
CANOPY_HD inline std::int64_t scatter_source(std::int64_t t, std::int64_t nw, const std::int64_t* upd_batch,
                                             const std::int64_t* upd_window) {
  const std::int64_t b = t / nw;
  return upd_batch[b] + upd_window[t - b * nw];
}

/// scatter-add's combine, as the CPU loop: in the compute type (float for the 16-bit floats),
/// integers wrapping; bool is `or`.
template <class T>
CANOPY_HD inline T add_value(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else return math::store<T>(math::binary(BinaryOp::add, math::load(a), math::load(b)));
}

/// Whether a scatter may write its elements in any order, each straight into the operand: one
/// window's elements are distinct, and an add of integers (or bools) is exact in any order (the
/// GPU adds atomically). Otherwise windows may overlap (the indices are on the device, unread),
/// and the writers of each element are put in the CPU's order by a stable sort (SortedWrites).
inline bool scatter_in_any_order(ScatterOp op, DType dtype, std::int64_t windows) {
  return windows <= 1 || (op == ScatterOp::add && !is_floating(dtype));
}

/// A scatter's writes stably sorted by where they land: keys[p] is the target + 1 (0: dropped) and
/// ids[p] what writes there, so each target's run lists its writers in the CPU's order. What is
/// sorted is either every element (ids: element numbers, keys: the element's target) or, where two
/// windows are the same elements or share none (WindowStartMap's one-element extents along every
/// indexed dim), every window (ids: batch numbers, keys: the window's start), which takes 1/nw of
/// the memory and the sorting.
struct SortedWrites {
  const unsigned long long* keys;
  const unsigned long long* ids;
  std::int64_t count;
  /// Whether p ends its target's run: the last writer.
  CANOPY_HD bool ends_run(std::int64_t p) const { return keys[p] != 0 && (p + 1 == count || keys[p + 1] != keys[p]); }
  /// Whether p starts its target's run.
  CANOPY_HD bool starts_run(std::int64_t p) const { return keys[p] != 0 && (p == 0 || keys[p - 1] != keys[p]); }

  /// The write at sorted position p, element `offset` past the target (0 for sorted elements; the
  /// window element's operand offset for sorted windows), `source(q)` the update position q
  /// reads: under `set` the run's last writer writes; under `add` the run's head adds every
  /// writer's update in order, rounding after each as the CPU loop does.
  template <ScatterOp op, class T, class Source>
  CANOPY_HD void apply(std::int64_t p, std::int64_t offset, const T* upd, const Source& source, T* operand) const {
    if constexpr (op == ScatterOp::set) {
      if (ends_run(p)) operand[static_cast<std::int64_t>(keys[p]) - 1 + offset] = upd[source(p)];
    } else {
      if (!starts_run(p)) return;
      T* target = operand + (static_cast<std::int64_t>(keys[p]) - 1 + offset);
      T sum = *target;
      for (std::int64_t q = p; q < count && keys[q] == keys[p]; ++q) sum = add_value(sum, upd[source(q)]);
      *target = sum;
    }
  }
};

/// Sorted element p of a scatter with nw-element windows: its write (SortedWrites over elements).
template <ScatterOp op, class T>
CANOPY_HD void scatter_sorted_element(const SortedWrites& sorted, std::int64_t p, std::int64_t nw, const T* upd,
                                      const std::int64_t* upd_batch, const std::int64_t* upd_window, T* operand) {
  sorted.apply<op>(p, 0, upd, [&](std::int64_t q) {
    return scatter_source(static_cast<std::int64_t>(sorted.ids[q]), nw, upd_batch, upd_window);
  }, operand);
}

/// Element w of sorted window p: its write (SortedWrites over windows).
template <ScatterOp op, class T>
CANOPY_HD void scatter_sorted_window(const SortedWrites& sorted, std::int64_t p, std::int64_t w, const T* upd,
                                     const std::int64_t* upd_batch, const std::int64_t* upd_window,
                                     const std::int64_t* op_window, T* operand) {
  sorted.apply<op>(p, op_window[w], upd, [&](std::int64_t q) {
    return upd_batch[sorted.ids[q]] + upd_window[w];
  }, operand);
}

/// -1, 0 or 1 comparing a and b in JAX's total order (sort.cpp's): -0.0 equals 0.0, every NaN
/// sorts after every number and equals every other NaN.
template <class C>
CANOPY_HD inline int total_order(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = a != a, nb = b != b;
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

/// total_order of elements i and j of `data`, an array of `dtype` (the 16-bit floats compare as f32).
CANOPY_HD inline int compare_at(DType dtype, const void* data, std::int64_t i, std::int64_t j) {
  const auto cmp = [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(data);
    return total_order(math::load(p[i]), math::load(p[j]));
  };
  switch (dtype) {
    case DType::bool_: return cmp(bool{});
    case DType::i32: return cmp(std::int32_t{});
    case DType::u32: return cmp(std::uint32_t{});
    case DType::bf16: return cmp(bf16{});
    case DType::f32: return cmp(float{});
    case DType::u8: return cmp(std::uint8_t{});
    case DType::i8: return cmp(std::int8_t{});
    case DType::u16: return cmp(std::uint16_t{});
    case DType::i16: return cmp(std::int16_t{});
    case DType::f16: return cmp(f16{});
    case DType::i64: return cmp(std::int64_t{});
    case DType::u64: return cmp(std::uint64_t{});
    default: return cmp(double{});
  }
}

/// Strict weak order on positions of a rows x len array: by row, then lexicographically by up to
/// kMax key operands (each rows x len, of its own dtype). Sorting positions stably with it once
/// per group of kMax keys, the last group first, orders each row as sort.cpp's stable sort does.
struct RowOrder {
  static constexpr int kMax = 4;
  std::int64_t len = 1;
  int count = 0;
  const void* data[kMax] = {};
  DType dtype[kMax] = {};
  CANOPY_HD bool operator()(std::int64_t i, std::int64_t j) const {
    const std::int64_t ri = i / len, rj = j / len;
    if (ri != rj) return ri < rj;
    for (int k = 0; k < count; ++k)
      if (const int c = compare_at(dtype[k], data[k], i, j)) return c < 0;
    return false;
  }
};

/// The orders sort's passes use: keys [first, first + kMax) of `keys` for each group, last group first.
inline std::vector<RowOrder> sort_passes(std::span<const void* const> keys, std::span<const DType> dtypes,
                                         std::int64_t len) {
  std::vector<RowOrder> passes;
  const int n = static_cast<int>(keys.size());
  for (int first = ((n - 1) / RowOrder::kMax) * RowOrder::kMax; first >= 0; first -= RowOrder::kMax) {
    RowOrder o;
    o.len = len;
    for (int k = first; k < n && k < first + RowOrder::kMax; ++k) {
      o.data[o.count] = keys[static_cast<std::size_t>(k)];
      o.dtype[o.count++] = dtypes[static_cast<std::size_t>(k)];
    }
    passes.push_back(o);
  }
  return passes;
}

}  // namespace canopy::kernels::cuda::indexing
