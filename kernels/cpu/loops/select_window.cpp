// Max pooling's derivative on plain loops, as XLA's select_and_gather_add and
// select_and_scatter_add: each window of the operand selects its first maximal element, a
// tangent is read there (gather) or a cotangent added there (scatter). One pass over the windows
// replaces the slice / compare / select / pad chain the derivative is otherwise built from.
#include <algorithm>
#include <limits>
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

/// For each window: the flat offset into the operand of its first maximal element in window
/// order, or -1 when the maximum is padding (a padded position or a base-dilation hole counts as
/// -inf and comes first on a tie) or the window holds a NaN.
///
/// When the last dimension is not windowed (window 1, stride 1, no padding: the channels of NHWC
/// pooling), the windows of one row along it read consecutive elements, so a row of windows is
/// one vector loop per tap; otherwise rows have length 1. Rows are walked with an odometer (no
/// division per window); a row wholly inside the operand reads its taps at precomputed offsets,
/// one at an edge checks each tap's position.
template <class T>
std::vector<std::int64_t> selections(const T* x, const WindowGeometry& g) {
  using C = loops::compute_t<T>;
  const std::size_t r = g.in.size();
  const std::int64_t nout = shape_size(g.out);
  std::vector<std::int64_t> sel(static_cast<std::size_t>(nout), -1);
  if (nout == 0) return sel;
  const Shape in_st = contiguous_strides(g.in);
  const bool rows = r > 0 && g.window[r - 1] == 1 && g.strides[r - 1] == 1 && g.pad_lo[r - 1] == 0 &&
                    g.pad_hi[r - 1] == 0 && g.base_dilation[r - 1] == 1 && g.out[r - 1] == g.in[r - 1];
  const std::size_t wr = rows ? r - 1 : r;  // the dimensions a window spans
  const std::int64_t len = rows ? g.out[r - 1] : 1, nrows = nout / len;
  std::int64_t taps = 1;
  for (std::size_t d = 0; d < wr; ++d) taps *= g.window[d];
  // Each tap's offset along every spanned dimension, in the base-dilated operand, window order.
  std::vector<std::int64_t> tap_pos(static_cast<std::size_t>(taps) * wr), tap_delta(static_cast<std::size_t>(taps), 0);
  bool dilated = false;
  for (std::size_t d = 0; d < wr; ++d) dilated |= g.base_dilation[d] != 1;
  for (std::int64_t t = 0; t < taps; ++t) {
    std::int64_t tr = t;
    for (std::size_t d = wr; d-- > 0;) {
      const std::int64_t k = tr % g.window[d] * g.window_dilation[d];
      tr /= g.window[d];
      tap_pos[static_cast<std::size_t>(t) * wr + d] = k;
      tap_delta[static_cast<std::size_t>(t)] += k * in_st[d];
    }
  }
  const std::int64_t work = nout * taps;
  loops::parallel_for(nrows, [&](std::int64_t b, std::int64_t e) {
    // Per lane of a row: the tap holding its maximum so far and whether it saw a NaN, 32-bit
    // like a float lane so the loop over a row vectorises; tap_base[t] is tap t's row start in the
    // operand, -1 for padding.
    std::vector<std::int64_t> o(wr), start(wr), tap_base(static_cast<std::size_t>(taps));
    std::vector<std::int32_t> at(static_cast<std::size_t>(len)), nan(static_cast<std::size_t>(len));
    std::vector<C> best(static_cast<std::size_t>(len));
    std::int64_t rem = b;
    for (std::size_t d = wr; d-- > 0;) {
      o[d] = rem % g.out[d];
      rem /= g.out[d];
    }
    auto next_row = [&] {  // the odometer over the spanned dimensions, row-major
      for (std::size_t d = wr; d-- > 0;) {
        if (++o[d] < g.out[d]) return;
        o[d] = 0;
      }
    };
    for (std::int64_t row = b; row < e; ++row, next_row()) {
      // The window's first position along each dimension, in the padded (dilated) operand: it
      // fits in int64 (the shape rule bounds it); minus a low padding near INT64_MIN it may not,
      // and then the whole window lies past the operand.
      bool whole = !dilated, outside = false;
      for (std::size_t d = 0; d < wr; ++d) {
        outside |= __builtin_sub_overflow(o[d] * g.strides[d], g.pad_lo[d], &start[d]);
        // (The last tap's position is compared by subtraction: start may be near INT64_MAX.)
        whole = whole && start[d] >= 0 && start[d] < g.in[d] - (g.window[d] - 1) * g.window_dilation[d];
      }
      std::int64_t* out = sel.data() + row * len;
      if (outside) continue;  // every tap is padding: the first (-inf) is the selection, -1
      std::int64_t corner = 0;  // only for a window wholly inside (a start may be near INT64_MAX)
      if (whole)
        for (std::size_t d = 0; d < wr; ++d) corner += start[d] * in_st[d];
      for (std::int64_t t = 0; t < taps; ++t) {
        std::int64_t base = 0;
        bool inside = true;
        if (whole) {
          base = corner + tap_delta[static_cast<std::size_t>(t)];
        } else {
          for (std::size_t d = 0; d < wr && inside; ++d) {
            std::int64_t p = 0;
            inside = !__builtin_add_overflow(start[d], tap_pos[static_cast<std::size_t>(t) * wr + d], &p) && p >= 0 &&
                     p % g.base_dilation[d] == 0 && p / g.base_dilation[d] < g.in[d];
            base += inside ? p / g.base_dilation[d] * in_st[d] : 0;
          }
        }
        tap_base[static_cast<std::size_t>(t)] = inside ? base : -1;
        const auto tap = static_cast<std::int32_t>(t);
        if (!inside) {  // padding (-inf) along the whole row: the maximum so far only as the first tap
          if (t == 0) {
            std::fill(best.begin(), best.end(), -std::numeric_limits<C>::infinity());
            std::fill(at.begin(), at.end(), 0);
            std::fill(nan.begin(), nan.end(), 0);
          }
          continue;
        }
        const T* xr = x + base;
        if (t == 0) {
#pragma omp simd
          for (std::int64_t j = 0; j < len; ++j) {
            const C v = loops::load(xr[j]);
            best[j] = v;
            at[j] = 0;
            nan[j] = v != v;
          }
          continue;
        }
        if constexpr (std::is_same_v<T, float>) take_larger_f32(xr, best.data(), at.data(), nan.data(), len, tap);
        else take_larger(xr, best.data(), at.data(), nan.data(), len, tap);
      }
      // A window holding a NaN has a NaN maximum, which equals no element.
      for (std::int64_t j = 0; j < len; ++j) {
        const std::int64_t tb = tap_base[static_cast<std::size_t>(at[j])];
        out[j] = nan[j] || tb < 0 ? -1 : tb + j;
      }
    }
  }, work >= loops::kParallelMin ? 2 : nrows + 1);
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
