// Max pooling's derivative on plain loops, as XLA's select_and_gather_add and
// select_and_scatter_add: each window of the operand selects its first maximal element, a
// tangent is read there (gather) or a cotangent added there (scatter). One pass over the windows
// replaces the slice / compare / select / pad chain the derivative is otherwise built from.
#include <algorithm>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "canopy/kernels/cpu_nn.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

/// One tap over a row of windows: lane j keeps the larger of its maximum so far and v = xr[j]
/// (the tap number where it grew), and notes a NaN. 32-bit lanes throughout, so it vectorises.
template <class T, class C>
[[gnu::always_inline]] inline void take_larger(const T* xr, C* best, std::int32_t* at, std::int32_t* nan, std::int64_t len,
                                               std::int32_t tap) {
#pragma omp simd
  for (std::int64_t j = 0; j < len; ++j) {
    const C v = loops::load(xr[j]);
    nan[j] |= v != v;
    const bool take = v > best[j];
    best[j] = take ? v : best[j];
    at[j] = take ? tap : at[j];
  }
}
// f32, max pooling's case, compiled for each instruction set.
CANOPY_ISA_VARIANTS(take_larger_f32,
                    (const float* xr, float* best, std::int32_t* at, std::int32_t* nan, std::int64_t len, std::int32_t tap),
                    (xr, best, at, nan, len, tap), take_larger(xr, best, at, nan, len, tap);)

/// How selections walks the windows of a geometry: in rows of `row_length` windows along the last
/// dimension where that is not windowed (else rows of one), each window spanning the first
/// `spanned` dimensions, its taps at offsets worked out once.
struct WindowWalk {
  std::size_t spanned = 0;      ///< the dimensions a window spans
  std::int64_t row_length = 1;  ///< windows per row, consecutive along the last dimension
  std::int64_t taps = 1;        ///< taps per window
  bool dilated = false;         ///< whether a spanned dimension has base dilation
  Shape in_strides;             ///< the operand's element strides
  /// Per tap, in window order: its offset along each spanned dimension in the base-dilated
  /// operand (tap_pos[t * spanned + d]), and its element offset from the window's corner.
  std::vector<std::int64_t> tap_pos, tap_delta;
};

WindowWalk window_walk(const WindowGeometry& g) {
  WindowWalk w;
  const std::size_t r = g.in.size();
  const bool rows = r > 0 && g.window[r - 1] == 1 && g.strides[r - 1] == 1 && g.pad_lo[r - 1] == 0 &&
                    g.pad_hi[r - 1] == 0 && g.base_dilation[r - 1] == 1 && g.out[r - 1] == g.in[r - 1];
  w.spanned = rows ? r - 1 : r;
  w.row_length = rows ? g.out[r - 1] : 1;
  w.in_strides = contiguous_strides(g.in);
  for (std::size_t d = 0; d < w.spanned; ++d) {
    w.taps *= g.window[d];
    w.dilated |= g.base_dilation[d] != 1;
  }
  w.tap_pos.assign(static_cast<std::size_t>(w.taps) * w.spanned, 0);
  w.tap_delta.assign(static_cast<std::size_t>(w.taps), 0);
  for (std::int64_t t = 0; t < w.taps; ++t) {
    std::int64_t tr = t;
    for (std::size_t d = w.spanned; d-- > 0;) {
      const std::int64_t k = tr % g.window[d] * g.window_dilation[d];
      tr /= g.window[d];
      w.tap_pos[static_cast<std::size_t>(t) * w.spanned + d] = k;
      w.tap_delta[static_cast<std::size_t>(t)] += k * w.in_strides[d];
    }
  }
  return w;
}

/// Where a row's window starts.
struct WindowStart {
  bool whole;    ///< every tap inside the operand (no dilation): taps are the corner plus tap_delta
  bool outside;  ///< past the operand: every tap is padding
};

/// The first position, along each spanned dimension in the padded (dilated) operand, of the
/// window at index `o` (into `start`). It fits in int64 (the shape rule bounds it); minus a low
/// padding near INT64_MIN it may not, and then the whole window lies past the operand.
WindowStart window_start(const WindowGeometry& g, const WindowWalk& w, std::span<const std::int64_t> o,
                         std::span<std::int64_t> start) {
  WindowStart at{!w.dilated, false};
  for (std::size_t d = 0; d < w.spanned; ++d) {
    at.outside |= __builtin_sub_overflow(o[d] * g.strides[d], g.pad_lo[d], &start[d]);
    // (The last tap's position is compared by subtraction: start may be near INT64_MAX.)
    at.whole = at.whole && start[d] >= 0 && start[d] < g.in[d] - (g.window[d] - 1) * g.window_dilation[d];
  }
  return at;
}

/// Tap t's element offset in the operand for a window at `start` not wholly inside, or -1 where
/// the tap is padding (outside the operand, or a base-dilation hole).
std::int64_t edge_tap_offset(const WindowGeometry& g, const WindowWalk& w, std::span<const std::int64_t> start,
                             std::int64_t t) {
  std::int64_t base = 0;
  for (std::size_t d = 0; d < w.spanned; ++d) {
    std::int64_t p = 0;
    const bool inside = !__builtin_add_overflow(start[d], w.tap_pos[static_cast<std::size_t>(t) * w.spanned + d], &p) &&
                        p >= 0 && p % g.base_dilation[d] == 0 && p / g.base_dilation[d] < g.in[d];
    if (!inside) return -1;
    base += p / g.base_dilation[d] * w.in_strides[d];
  }
  return base;
}

/// A row of windows' running maximum over their taps so far, per lane (window): the maximum, the
/// tap it came from and whether a NaN was seen; 32-bit like a float lane, so the loops vectorise.
template <class T>
class RowMaximum {
 public:
  using C = loops::compute_t<T>;
  explicit RowMaximum(std::int64_t len)
      : best_(static_cast<std::size_t>(len)), at_(static_cast<std::size_t>(len)), nan_(static_cast<std::size_t>(len)) {}
  /// The first tap is padding (-inf) along the whole row.
  void start_with_padding() {
    std::fill(best_.begin(), best_.end(), -std::numeric_limits<C>::infinity());
    std::fill(at_.begin(), at_.end(), 0);
    std::fill(nan_.begin(), nan_.end(), 0);
  }
  /// The first tap reads xr[j] for lane j.
  void start_with(const T* xr) {
    const auto len = static_cast<std::int64_t>(best_.size());
#pragma omp simd
    for (std::int64_t j = 0; j < len; ++j) {
      const C v = loops::load(xr[j]);
      best_[j] = v;
      at_[j] = 0;
      nan_[j] = v != v;
    }
  }
  /// A later tap reads xr[j] for lane j.
  void take(const T* xr, std::int32_t tap) {
    const auto len = static_cast<std::int64_t>(best_.size());
    if constexpr (std::is_same_v<T, float>) take_larger_f32(xr, best_.data(), at_.data(), nan_.data(), len, tap);
    else take_larger(xr, best_.data(), at_.data(), nan_.data(), len, tap);
  }
  /// Lane j's selection into out[j], given each tap's row start in the operand (-1: padding). A
  /// window holding a NaN has a NaN maximum, which equals no element.
  void select(std::span<const std::int64_t> tap_base, std::int64_t* out) const {
    for (std::size_t j = 0; j < best_.size(); ++j) {
      const std::int64_t tb = tap_base[static_cast<std::size_t>(at_[j])];
      out[j] = nan_[j] || tb < 0 ? -1 : tb + static_cast<std::int64_t>(j);
    }
  }

 private:
  std::vector<C> best_;
  std::vector<std::int32_t> at_, nan_;
};

/// The selections of one row of windows, starting at `start`, into out[0, row_length);
/// `tap_base` is scratch for each tap's row start in the operand (-1 for padding).
template <class T>
void select_row(const T* x, const WindowWalk& w, const WindowGeometry& g, std::span<const std::int64_t> start,
                bool whole, RowMaximum<T>& maximum, std::span<std::int64_t> tap_base, std::int64_t* out) {
  std::int64_t corner = 0;  // only for a window wholly inside (a start may be near INT64_MAX)
  if (whole)
    for (std::size_t d = 0; d < w.spanned; ++d) corner += start[d] * w.in_strides[d];
  for (std::int64_t t = 0; t < w.taps; ++t) {
    const std::int64_t base =
        whole ? corner + w.tap_delta[static_cast<std::size_t>(t)] : edge_tap_offset(g, w, start, t);
    tap_base[static_cast<std::size_t>(t)] = base;
    if (base < 0) {  // padding (-inf) along the whole row: the maximum so far only as the first tap
      if (t == 0) maximum.start_with_padding();
      continue;
    }
    if (t == 0) maximum.start_with(x + base);
    else maximum.take(x + base, static_cast<std::int32_t>(t));
  }
  maximum.select(tap_base, out);
}

/// The selections of rows [b, e) of windows into sel. Rows are walked with an odometer over the
/// spanned dimensions (no division per window).
template <class T>
void select_rows(const T* x, const WindowGeometry& g, const WindowWalk& w, std::int64_t b, std::int64_t e,
                 std::int64_t* sel) {
  std::vector<std::int64_t> o(w.spanned), start(w.spanned), tap_base(static_cast<std::size_t>(w.taps));
  RowMaximum<T> maximum(w.row_length);
  std::int64_t rem = b;
  for (std::size_t d = w.spanned; d-- > 0;) {
    o[d] = rem % g.out[d];
    rem /= g.out[d];
  }
  auto next_row = [&] {  // row-major
    for (std::size_t d = w.spanned; d-- > 0;) {
      if (++o[d] < g.out[d]) return;
      o[d] = 0;
    }
  };
  for (std::int64_t row = b; row < e; ++row, next_row()) {
    const WindowStart at = window_start(g, w, o, start);
    if (at.outside) continue;  // every tap is padding: the first (-inf) is the selection, -1
    select_row(x, w, g, start, at.whole, maximum, tap_base, sel + row * w.row_length);
  }
}

/// For each window: the flat offset into the operand of its first maximal element in window
/// order, or -1 when the maximum is padding (a padded position or a base-dilation hole counts as
/// -inf and comes first on a tie) or the window holds a NaN.
///
/// When the last dimension is not windowed (window 1, stride 1, no padding: the channels of NHWC
/// pooling), the windows of one row along it read consecutive elements, so a row of windows is
/// one vector loop per tap; otherwise rows have length 1. A row wholly inside the operand reads
/// its taps at precomputed offsets, one at an edge checks each tap's position.
template <class T>
std::vector<std::int64_t> selections(const T* x, const WindowGeometry& g) {
  const std::int64_t nout = shape_size(g.out);
  std::vector<std::int64_t> sel(static_cast<std::size_t>(nout), -1);
  if (nout == 0) return sel;
  const WindowWalk w = window_walk(g);
  const std::int64_t nrows = nout / w.row_length, work = nout * w.taps;
  loops::parallel_for(nrows, [&](std::int64_t b, std::int64_t e) { select_rows(x, g, w, b, e, sel.data()); },
                      work >= loops::kParallelMin ? 2 : nrows + 1);
  return sel;
}

/// Whether windows with different indices along dimension 0 select from disjoint operand rows
/// (a window of 1 with stride 1 and no padding or dilation there, as a batch dimension has): then
/// the scatter runs in parallel over those rows.
bool rows_apart(const WindowGeometry& g) {
  return !g.in.empty() && g.window[0] == 1 && g.strides[0] == 1 && g.pad_lo[0] == 0 && g.pad_hi[0] == 0 &&
         g.base_dilation[0] == 1 && g.out[0] == g.in[0];
}

template <class F>
void visit_float(DType dtype, F&& f) {
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_floating_point_v<loops::compute_t<T>>) f(std::type_identity<T>{});
  });
}

}  // namespace

void select_and_gather_add(DType dtype, const void* tangent, const void* operand, void* out, const WindowGeometry& g) {
  ensure_runtime();
  visit_float(dtype, [&]<class T>(std::type_identity<T>) {
    const std::vector<std::int64_t> sel = selections(static_cast<const T*>(operand), g);
    const T* t = static_cast<const T*>(tangent);
    T* y = static_cast<T*>(out);
    loops::parallel_for(static_cast<std::int64_t>(sel.size()), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) {
        const std::int64_t s = sel[static_cast<std::size_t>(i)];
        y[i] = s >= 0 ? t[s] : loops::store<T>(0.0f);
      }
    });
  });
}

void select_and_scatter_add(DType dtype, const void* source, const void* operand, void* out, const WindowGeometry& g) {
  ensure_runtime();
  visit_float(dtype, [&]<class T>(std::type_identity<T>) {
    const std::vector<std::int64_t> sel = selections(static_cast<const T*>(operand), g);
    const T* src = static_cast<const T*>(source);
    T* y = static_cast<T*>(out);
    std::fill_n(y, shape_size(g.in), loops::store<T>(0.0f));
    auto add_range = [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) {
        const std::int64_t s = sel[static_cast<std::size_t>(i)];
        if (s >= 0) y[s] = loops::store<T>(loops::add(loops::load(y[s]), loops::load(src[i])));
      }
    };
    const auto n = static_cast<std::int64_t>(sel.size());
    if (!rows_apart(g) || g.out[0] == 0) return add_range(0, n);
    // Windows overlap only within a row of dimension 0: rows go to threads whole.
    const std::int64_t per_row = n / g.out[0];
    loops::parallel_for(
        g.out[0], [&](std::int64_t r0, std::int64_t r1) { add_range(r0 * per_row, r1 * per_row); },
        n >= loops::kParallelMin ? 2 : g.out[0] + 1);
  });
}

}  // namespace canopy::kernels::cpu
