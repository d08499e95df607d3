// Internal to the windowed primitives (reduce_window_*, conv_general_dilated): lax's padding
// resolution, and the shared shape rule, kernel geometry and samples of reduce_window_max/sum.
#pragma once

#include <algorithm>
#include <cctype>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../common.hpp"
#include "canopy/kernels/nn_geometry.hpp"

namespace canopy::detail {

using PadPairs = std::vector<std::pair<std::int64_t, std::int64_t>>;

inline std::string pads_text(const PadPairs& p) {
  std::string s = "(";
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (i) s += ',';
    s += concat("(", p[i].first, ",", p[i].second, ")");
  }
  return s + ")";
}

/// lax.padtype_to_pads: (low, high) per dim for `padding` over input sizes `in` with (dilated)
/// window sizes `window`. SAME gives ceil(in / stride) outputs, the odd pad element going high
/// (SAME_LOWER: low). Explicit pairs must number in.size().
inline PadPairs resolve_padding(std::string_view api, const Padding& padding, std::span<const std::int64_t> in,
                                std::span<const std::int64_t> window, std::span<const std::int64_t> strides) {
  if (padding.mode.empty()) {
    if (padding.pairs.size() != in.size())
      raise<ShapeError>(api, "padding", pads_text(padding.pairs),
                        concat("has ", padding.pairs.size(), " (low, high) pairs but ", in.size(), " are needed"));
    return padding.pairs;
  }
  std::string mode = padding.mode;
  std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  if (mode != "SAME" && mode != "SAME_LOWER" && mode != "VALID")
    raise<ShapeError>(api, "padding", padding.mode, "is not a padding type",
                      "use \"SAME\", \"SAME_LOWER\", \"VALID\" or explicit (low, high) pairs");
  PadPairs out(in.size(), {0, 0});
  if (mode == "VALID") return out;
  for (std::size_t d = 0; d < in.size(); ++d) {
    // ceil(in / s) and (o - 1) * s + window - in, ordered so that no step overflows.
    std::int64_t s = std::max<std::int64_t>(strides[d], 1), o = in[d] == 0 ? 0 : (in[d] - 1) / s + 1;
    std::int64_t total = std::max<std::int64_t>(window[d] - (in[d] - (o - 1) * s), 0);
    std::int64_t small = total / 2;
    out[d] = mode == "SAME" ? std::pair{small, total - small} : std::pair{total - small, small};
  }
  return out;
}

/// Dilation/stride defaults: empty means all ones; otherwise `n` positive entries.
inline std::vector<std::int64_t> ones_or(std::string_view api, const char* what, const std::vector<std::int64_t>& v,
                                         std::size_t n) {
  if (v.empty()) return std::vector<std::int64_t>(n, 1);
  bool ok = v.size() == n && std::all_of(v.begin(), v.end(), [](std::int64_t x) { return x > 0; });
  if (!ok) raise<ShapeError>(api, what, list_text(v), concat("must be ", n, " positive integers"));
  return v;
}

/// The parameters of reduce_window_max / reduce_window_sum (lax's, padding resolved).
struct WindowParams {
  std::vector<std::int64_t> window_dimensions, window_strides;
  PadPairs padding;
  std::vector<std::int64_t> base_dilation, window_dilation;
};

/// lax's _dilate_shape: the extent of n elements spread d apart (for extents a rule has checked).
inline std::int64_t dilated_size(std::int64_t n, std::int64_t d) { return n == 0 ? 0 : 1 + d * (n - 1); }

/// dilated_size in a shape rule or op: ShapeError `<api>: <subject> (dimension <dim>) of <n>
/// dilated by <d> is longer than int64 can count` when the extent overflows.
inline std::int64_t checked_dilated_size(std::string_view api, std::string_view subject, std::size_t dim,
                                         std::int64_t n, std::int64_t d) {
  std::int64_t r = 0;
  if (n != 0 && (__builtin_mul_overflow(d, n - 1, &r) || __builtin_add_overflow(r, 1, &r)))
    raise<ShapeError>(api, subject, concat("dimension ", dim),
                      concat("of ", n, " dilated by ", d, " is longer than int64 can count"));
  return r;
}

/// A (dilated) operand extent plus its (low, high) padding in a shape rule; ShapeError when the
/// sum overflows.
inline std::int64_t checked_padded_size(std::string_view api, std::size_t dim, std::int64_t extent,
                                        std::pair<std::int64_t, std::int64_t> pad) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(extent, pad.first, &r) || __builtin_add_overflow(r, pad.second, &r))
    raise<ShapeError>(api, "padding", concat("dimension ", dim),
                      concat("(", pad.first, ",", pad.second, ") takes the operand extent ", extent,
                             " past what int64 can count"));
  return r;
}

/// jax's _conv_general_vjp_lhs_padding for one spatial dim: the (low, high) padding under which
/// a window sweep over the (stride-dilated) cotangent lands back on each input element. All
/// extents already dilated: input `in`, window `win`, cotangent `out`; `low` is the forward pad.
inline std::pair<std::int64_t, std::int64_t> transpose_padding(std::int64_t in, std::int64_t win, std::int64_t out,
                                                               std::int64_t low) {
  const std::int64_t before = win - low - 1;
  return {before, in + win - 1 - out - before};
}

/// The params of a reduce_window over a value with one more leading (batch) dim: a window of 1
/// there, so examples stay apart. The batching rule of reduce_window_*.
inline WindowParams with_leading_unit_dim(const WindowParams& p) {
  WindowParams q = p;
  q.window_dimensions.insert(q.window_dimensions.begin(), 1);
  q.window_strides.insert(q.window_strides.begin(), 1);
  q.padding.insert(q.padding.begin(), {0, 0});
  q.base_dilation.insert(q.base_dilation.begin(), 1);
  q.window_dilation.insert(q.window_dilation.begin(), 1);
  return q;
}

/// Shape rule shared by reduce_window_*: one entry per operand dim, and the (dilated) window must
/// fit in the (dilated, padded) operand on every dim.
inline Aval window_aval(std::string_view prim, const Aval& a, const WindowParams& p, unsigned kinds) {
  expect_kind(prim, a, kinds);
  const std::size_t r = a.ndim();
  auto check = [&](const char* what, std::size_t n, bool positive, std::span<const std::int64_t> v) {
    bool ok = n == r && std::all_of(v.begin(), v.end(), [&](std::int64_t x) { return !positive || x > 0; });
    if (!ok)
      raise<ShapeError>(prim, what, list_text(v),
                        concat("must have ", r, positive ? " positive" : "", " entries, one per dimension of ", to_string(a)));
  };
  check("window_dimensions", p.window_dimensions.size(), true, p.window_dimensions);
  check("window_strides", p.window_strides.size(), true, p.window_strides);
  check("base_dilation", p.base_dilation.size(), true, p.base_dilation);
  check("window_dilation", p.window_dilation.size(), true, p.window_dilation);
  if (p.padding.size() != r)
    raise<ShapeError>(prim, "padding", pads_text(p.padding), concat("must have one pair per dimension of ", to_string(a)));
  Aval out{a.dtype, {}, a.weak_type};
  for (std::size_t d = 0; d < r; ++d) {
    std::int64_t in = checked_dilated_size(prim, "operand", d, a.shape[d], p.base_dilation[d]);
    std::int64_t padded = checked_padded_size(prim, d, in, p.padding[d]);
    std::int64_t win = checked_dilated_size(prim, "window", d, p.window_dimensions[d], p.window_dilation[d]);
    if (padded < win && a.shape[d] == 0) {  // an empty dim stays empty, as in lax
      out.shape.push_back(0);
      continue;
    }
    if (padded < win)
      raise<ShapeError>(prim, "window", list_text(p.window_dimensions),
                        concat("does not fit in ", to_string(a), " padded by ", pads_text(p.padding), " (dimension ", d,
                               ": ", win, " > ", padded, ")"),
                        "pad the operand (\"SAME\") or use a smaller window");
    out.shape.push_back((padded - win) / p.window_strides[d] + 1);
  }
  return out;
}

/// The kernel's view of a reduce_window call.
inline kernels::WindowGeometry window_geometry(const Array& x, const Array& y, const WindowParams& p) {
  kernels::WindowGeometry g{x.shape(), y.shape(), p.window_dimensions, p.window_strides, {}, {},
                                 p.base_dilation, p.window_dilation};
  for (auto& [lo, hi] : p.padding) {
    g.pad_lo.push_back(lo);
    g.pad_hi.push_back(hi);
  }
  return g;
}

/// Samples for reduce_window_*: NHWC pooling (oneDNN path), padding, strides, dilations, other dtypes.
template <class Params>
std::vector<Sample<Params>> window_samples(bool ints) {
  std::vector<Sample<Params>> s;
  auto pool = [](std::int64_t k, std::int64_t st, PadPairs pads) {
    return Params{{1, k, k, 1}, {1, st, st, 1}, std::move(pads), {1, 1, 1, 1}, {1, 1, 1, 1}};
  };
  s.push_back({{sample_array(DType::f32, {2, 6, 6, 3}, -2, 2, 1)}, pool(2, 2, {{0, 0}, {0, 0}, {0, 0}, {0, 0}}), "2x2 pool"});
  s.push_back({{sample_array(DType::f32, {1, 5, 5, 2}, -2, 2, 2)}, pool(3, 2, {{0, 0}, {1, 1}, {1, 1}, {0, 0}}), "same pad"});
  s.push_back({{sample_array(DType::f64, {2, 4, 5}, -2, 2, 3)}, {{1, 2, 2}, {1, 1, 2}, {{0, 0}, {0, 1}, {1, 0}}, {1, 1, 1}, {1, 2, 1}},
               "f64 window dilation"});
  s.push_back({{sample_array(DType::f32, {3, 4}, -2, 2, 4)}, {{2, 2}, {1, 1}, {{0, 0}, {0, 0}}, {2, 1}, {1, 1}}, "base dilation"});
  s.push_back({{sample_array(DType::f32, {0, 4, 4, 1}, -2, 2, 5)}, pool(2, 1, {{0, 0}, {0, 0}, {0, 0}, {0, 0}}), "empty batch"});
  if (ints)
    s.push_back({{sample_array(DType::i32, {4, 4}, -9, 9, 6)}, {{2, 2}, {2, 2}, {{0, 0}, {0, 0}}, {1, 1}, {1, 1}}, "i32"});
  return s;
}

/// Samples for select_and_gather_add / select_and_scatter_add: window_samples' float operands with
/// a second array first, of the operand's shape (a tangent) or of the windows' (a cotangent).
template <class Params>
std::vector<Sample<Params>> select_samples(bool windows_shaped) {
  std::vector<Sample<Params>> s;
  std::uint64_t seed = 40;
  for (Sample<Params>& w : window_samples<Params>(false)) {
    const Aval a = w.inputs[0].aval();
    const Shape first = windows_shaped ? window_aval("select", a, w.params, kFloat).shape : a.shape;
    s.push_back({{sample_array(a.dtype, first, -1, 1, seed++), w.inputs[0]}, w.params, w.note});
  }
  return s;
}

/// select_and_gather_add(t, x): each window's t at its first maximal x (max pooling's jvp).
Array select_and_gather_add(const Array& tangent, const Array& operand, const WindowParams& params);
/// select_and_scatter_add(s, x): s added at each window's first maximal x (its transpose).
Array select_and_scatter_add(const Array& source, const Array& operand, const WindowParams& params);

}  // namespace canopy::detail
