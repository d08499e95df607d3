// Internal to the slicing primitives: dimension-number checks that raise the standard errors,
// and the offset tables that turn gather/scatter/dynamic_* into the kernels' window loops.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "../common.hpp"
#include "../rules.hpp"
#include "canopy/kernels/cpu_indexing.hpp"
#include "canopy/kernels/window_start.hpp"

namespace canopy::detail {

/// ShapeError unless `dims` are distinct, in [0, bound) and (when `sorted`) increasing.
void expect_dims(std::string_view prim, std::string_view what, const std::vector<int>& dims, std::size_t bound,
                 bool sorted, const Aval& about);
/// TypeError unless `a` is an integer dtype (any width, signed or unsigned).
void expect_index(std::string_view prim, std::string_view what, const Aval& a, int arg);

/// sum(i[k] * strides[k]) for every index i of `sizes`, row-major.
std::vector<std::int64_t> offset_table(std::span<const std::int64_t> sizes, std::span<const std::int64_t> strides);

using kernels::WindowBounds;
/// The bounds of windows of `extent` whose index vectors go along dim_map: a start outside
/// [0, shape[d] - extent[d]] is clamped into it when `clip`, otherwise the window is -1 (filled by
/// gather, dropped by scatter).
WindowBounds window_bounds(std::span<const int> dim_map, const Shape& operand_shape, std::span<const std::int64_t> extent,
                           bool clip);
/// Operand offset of each window's start (-1: outside), from `indices` in host memory.
std::vector<std::int64_t> window_starts(const Array& indices, const WindowBounds& bounds);

/// Start-index Arrays with negative entries replaced by dim + start (lax's _dynamic_slice_indices);
/// TypeError (naming `api`) for non-integer starts.
std::vector<Array> normalize_starts(const Array& x, const std::vector<Array>& starts, const char* api);
/// Static starts as i32 scalars, normalised the same way and pre-clamped into [0, dim].
std::vector<Array> static_starts(const Array& x, const std::vector<std::int64_t>& starts);

/// Shape rule shared by scatter and scatter-add: operand, indices, updates -> the operand's aval.
Aval scatter_aval(std::string_view prim, std::span<const Aval> avals, const ScatterDimensionNumbers& dn, unsigned kinds);
/// JAX's gather fill value when none is given: NaN, lowest signed, highest unsigned, true.
double default_fill_value(DType d);
/// One element of dtype d holding v, in storage wide enough for any dtype.
struct ElementBytes {
  alignas(8) unsigned char bytes[8] = {};
  ElementBytes(DType d, double v);
};

/// Params of gather (lax.gather without batching dims).
struct GatherParams {
  GatherDimensionNumbers dimension_numbers;
  Shape slice_sizes;
  GatherScatterMode mode = GatherScatterMode::fill_or_drop;
  std::optional<double> fill_value;
};
/// The window gather's offset tables (kernels' gather_windows: the windows' starts come from the
/// indices through `starts`) and its fill element.
struct GatherTables {
  WindowBounds starts;
  std::vector<std::int64_t> in_window, out_batch, out_window;
  ElementBytes fill;
};
/// The tables of gather(a, indices) into out_shape: shapes only, no index value is read.
GatherTables gather_tables(const Array& a, const Shape& out_shape, const GatherParams& params);

/// Params of scatter and scatter-add.
struct ScatterParams {
  ScatterDimensionNumbers dimension_numbers;
  GatherScatterMode mode = GatherScatterMode::fill_or_drop;
};
/// Offset tables of kernels' scatter_windows: update offsets of each batch and window element,
/// where each batch's window starts in the operand (from the indices through `starts`; -1: a
/// window leaving the operand, dropped unless the mode clips it), operand offsets of each window element.
struct ScatterTables {
  std::vector<std::int64_t> upd_batch, upd_window;
  WindowBounds starts;
  std::vector<std::int64_t> op_window;
};
/// The tables of scatter (operand a, updates u): shapes only, no index value is read.
ScatterTables scatter_tables(const Array& a, const Array& u, const ScatterDimensionNumbers& dn, GatherScatterMode mode);

/// Each axis number plus one (dimension numbers under a new leading batch axis).
inline std::vector<int> shifted_dims(const std::vector<int>& dims) {
  std::vector<int> r;
  for (int d : dims) r.push_back(d + 1);
  return r;
}

/// Batch-first indices [n, ..., k] with each index vector led by its example number: [n, ..., k + 1].
inline Array with_example_numbers(const Array& indices) {
  auto count_shape = indices.shape().vec();
  count_shape.back() = 1;
  return concatenate({iota(indices.dtype(), Shape(count_shape), 0), indices}, -1);
}

/// The batching rule of scatter and scatter-add (jax's _scatter_batching_rule): operand and
/// updates get the batch first (broadcast if unbatched). Unbatched indices: the batch dim is a
/// whole-size window dim. Batched indices: each index vector gains its example number (an iota)
/// as the coordinate of the operand's batch dim.
template <class P>
BatchResult batch_scatter(std::span<const Array> x, std::span<const int> bdims, const typename P::Params& params) {
  const std::int64_t n = batch_size(x, bdims);
  const Array operand = front_or_broadcast(x[0], bdims[0], n), updates = front_or_broadcast(x[2], bdims[2], n);
  typename P::Params q = params;
  auto& dn = q.dimension_numbers;
  dn.update_window_dims = shifted_dims(dn.update_window_dims);
  dn.inserted_window_dims = shifted_dims(dn.inserted_window_dims);
  dn.scatter_dims_to_operand_dims = shifted_dims(dn.scatter_dims_to_operand_dims);
  if (bdims[1] < 0) {
    dn.update_window_dims.insert(dn.update_window_dims.begin(), 0);
    return {bind<P>(Arrays{operand, x[1], updates}, q), {0}};
  }
  dn.inserted_window_dims.insert(dn.inserted_window_dims.begin(), 0);
  dn.scatter_dims_to_operand_dims.insert(dn.scatter_dims_to_operand_dims.begin(), 0);
  return {bind<P>(Arrays{operand, with_example_numbers(batch_to_front(x[1], bdims[1])), updates}, q), {0}};
}

/// The scalar starts of a batch of dynamic slices as gather/scatter indices i32[n, r] (with
/// `with_counts`, i32[n, r + 1] led by the example number). Starts of wider integer types are
/// clamped to dim - window (and i64 to i32's lowest) first so the conversion cannot wrap.
inline Array batched_starts(std::span<const Array> starts, std::span<const int> bdims, std::int64_t n,
                            const Shape& example, const Shape& window, bool with_counts) {
  Arrays cols;
  for (std::size_t d = 0; d < starts.size(); ++d) {
    Array s = front_or_broadcast(starts[d], bdims[d], n);
    // Clamped into i32 range first so the conversion cannot wrap (the clip mode clamps the rest).
    const double cap = static_cast<double>(std::max<std::int64_t>(example[d] - window[d], 0));
    if (is_unsigned(s.dtype()) && itemsize(s.dtype()) >= 4) {
      s = min(s, full({}, cap, s.dtype()));
    } else if (s.dtype() == DType::i64) {
      s = max(min(s, full({}, cap, s.dtype())), full({}, -2147483648.0, s.dtype()));
    }
    cols.push_back(reshape(s.astype(DType::i32), Shape{n, 1}));
  }
  const Array starts_matrix = cols.empty() ? zeros({n, 0}, DType::i32) : concatenate(cols, 1);
  return with_counts ? with_example_numbers(starts_matrix) : starts_matrix;
}

}  // namespace canopy::detail
