// What one element of the GPU's convolution and pooling kernels (kernels/cuda/nn.cu) is: which
// operand elements an output element reads, in which order, and how padding and dilation place
// them. Written once as __host__ __device__ functions so that the CPU suite compiles them for the
// host and checks them against the CPU loops (tests/cuda_nn_test.cpp).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "canopy/error.hpp"
#include "canopy/kernels/nn_geometry.hpp"
#include "canopy/kernels/element_math.hpp"

namespace canopy::kernels::cuda::nn {

/// Spatial dims the convolution kernel takes (the CPU loops take any number).
inline constexpr int kMaxConvSpatial = 6;
/// Dims the windowed kernels take.
inline constexpr int kMaxWindowRank = 8;

/// r = a - b in int64; false when the difference does not fit (the CPU's __builtin_sub_overflow).
CANOPY_HD inline bool sub_fits(std::int64_t a, std::int64_t b, std::int64_t& r) {
  r = static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
  return ((a ^ b) & (a ^ r)) >= 0;
}

/// acc + x * w in double, rounded after the product and after the sum as the CPU loop (no fused
/// multiply-add, which nvcc would otherwise contract this to).
CANOPY_HD inline double mul_add(double acc, double x, double w) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(acc, __dmul_rn(x, w));
#else
  return acc + x * w;
#endif
}

// ---------------------------------------------------------------------------------------------
// Convolution

/// ConvGeometry in fixed-size arrays, by value into a kernel.
struct ConvParams {
  int nsp = 0;                       ///< spatial rank
  std::int64_t cg = 0, og = 1;       ///< input / output features per group
  std::int64_t outputs = 0, taps = 1;
  /// The output's logical (N, C, spatial...) extents, and those dims ordered by decreasing output
  /// stride: element i is taken row-major in that order, so consecutive i write consecutive memory.
  std::int64_t dims[kMaxConvSpatial + 2] = {};
  int order[kMaxConvSpatial + 2] = {};
  std::int64_t in_size[kMaxConvSpatial] = {}, window[kMaxConvSpatial] = {}, strides[kMaxConvSpatial] = {};
  std::int64_t pad_lo[kMaxConvSpatial] = {}, lhs_dilation[kMaxConvSpatial] = {}, rhs_dilation[kMaxConvSpatial] = {};
  std::int64_t lhs_strides[kMaxConvSpatial + 2] = {}, rhs_strides[kMaxConvSpatial + 2] = {};
  std::int64_t out_strides[kMaxConvSpatial + 2] = {};
};

/// The kernel's view of `g`; DeviceError for more than kMaxConvSpatial spatial dims.
inline ConvParams conv_params(const ConvGeometry& g) {
  const std::size_t nsp = g.in_size.size();
  if (nsp > static_cast<std::size_t>(kMaxConvSpatial))
    ::canopy::detail::raise<DeviceError>("conv_general_dilated", "operands", std::to_string(nsp) + " spatial dims",
                                         "are more than the cuda kernel takes (6)");
  ConvParams p;
  p.nsp = static_cast<int>(nsp);
  p.cg = g.groups > 0 ? g.in_features / g.groups : 0;
  p.og = g.groups > 0 && g.out_features >= g.groups ? g.out_features / g.groups : 1;
  p.dims[0] = g.batch;
  p.dims[1] = g.out_features;
  p.outputs = g.batch * g.out_features;
  for (std::size_t d = 0; d < nsp; ++d) {
    p.dims[2 + d] = g.out_size[d];
    p.outputs *= g.out_size[d];
    p.taps *= g.window[d];
    p.in_size[d] = g.in_size[d];
    p.window[d] = g.window[d];
    p.strides[d] = g.strides[d];
    p.pad_lo[d] = g.pad_lo[d];
    p.lhs_dilation[d] = g.lhs_dilation[d];
    p.rhs_dilation[d] = g.rhs_dilation[d];
  }
  const int nd = p.nsp + 2;
  for (int d = 0; d < nd; ++d) {
    p.lhs_strides[d] = g.lhs_strides[static_cast<std::size_t>(d)];
    p.rhs_strides[d] = g.rhs_strides[static_cast<std::size_t>(d)];
    p.out_strides[d] = g.out_strides[static_cast<std::size_t>(d)];
    p.order[d] = d;
  }
  for (int a = 1; a < nd; ++a)  // insertion sort, stable: decreasing |stride|
    for (int b = a; b > 0; --b) {
      auto mag = [&](int d) { return p.out_strides[d] < 0 ? -p.out_strides[d] : p.out_strides[d]; };
      if (mag(p.order[b - 1]) >= mag(p.order[b])) break;
      const int t = p.order[b];
      p.order[b] = p.order[b - 1];
      p.order[b - 1] = t;
    }
  return p;
}

/// Output element i (0 <= i < p.outputs) of the convolution: its value, and its offset in the
/// output in `out_off`. As cpu::conv_loop: the sum in double over the window's taps (row-major)
/// and, per tap, the group's input features, skipping taps on padding or lhs-dilation holes.
template <class T>
CANOPY_HD inline T conv_element(const T* lhs, const T* rhs, const ConvParams& p, std::int64_t i,
                                std::int64_t& out_off) {
  std::int64_t idx[kMaxConvSpatial + 2];
  std::int64_t rem = i;
  out_off = 0;
  for (int j = p.nsp + 2; j-- > 0;) {
    const int d = p.order[j];
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
    out_off += idx[d] * p.out_strides[d];
  }
  const std::int64_t n = idx[0], oc = idx[1], grp = oc / p.og;
  const T* x0 = lhs + n * p.lhs_strides[0] + grp * p.cg * p.lhs_strides[1];
  const T* w0 = rhs + oc * p.rhs_strides[0];
  double acc = 0.0;
  for (std::int64_t t = 0; t < p.taps; ++t) {
    std::int64_t r = t, lo = 0, ro = 0;
    bool inside = true;
    for (int d = p.nsp; d-- > 0;) {
      const std::int64_t k = r % p.window[d];
      r /= p.window[d];
      // Position in the lhs-dilated, padded input; only multiples of lhs_dilation hold data.
      const std::int64_t pos = idx[2 + d] * p.strides[d] + k * p.rhs_dilation[d] - p.pad_lo[d];
      if (pos < 0 || pos % p.lhs_dilation[d] != 0 || pos / p.lhs_dilation[d] >= p.in_size[d]) {
        inside = false;
        break;
      }
      lo += pos / p.lhs_dilation[d] * p.lhs_strides[2 + d];
      ro += k * p.rhs_strides[2 + d];
    }
    if (!inside) continue;
    for (std::int64_t ci = 0; ci < p.cg; ++ci)
      acc = mul_add(acc, static_cast<double>(math::load(x0[lo + ci * p.lhs_strides[1]])),
                    static_cast<double>(math::load(w0[ro + ci * p.rhs_strides[1]])));
  }
  return math::store<T>(static_cast<compute_type_t<T>>(acc));
}

// ---------------------------------------------------------------------------------------------
// Windows: reduce_window, select_and_gather_add, select_and_scatter_add

/// WindowGeometry in fixed-size arrays (operand and windows row-major), by value into a kernel.
struct WindowParams {
  int rank = 0;
  std::int64_t outputs = 1, inputs = 1, taps = 1;
  std::int64_t in[kMaxWindowRank] = {}, out[kMaxWindowRank] = {}, window[kMaxWindowRank] = {};
  std::int64_t strides[kMaxWindowRank] = {}, pad_lo[kMaxWindowRank] = {};
  std::int64_t base_dilation[kMaxWindowRank] = {}, window_dilation[kMaxWindowRank] = {};
  std::int64_t in_strides[kMaxWindowRank] = {}, out_strides[kMaxWindowRank] = {};  ///< contiguous
};

/// The kernel's view of `g`; DeviceError naming `api` for more than kMaxWindowRank dims.
inline WindowParams window_params(const WindowGeometry& g, std::string_view api) {
  const std::size_t r = g.in.size();
  if (r > static_cast<std::size_t>(kMaxWindowRank))
    ::canopy::detail::raise<DeviceError>(api, "operand", to_string(g.in),
                                         "has more dims than the cuda kernel takes (8)", "reshape to at most 8 dims");
  WindowParams p;
  p.rank = static_cast<int>(r);
  for (std::size_t d = 0; d < r; ++d) {
    p.in[d] = g.in[d];
    p.out[d] = g.out[d];
    p.window[d] = g.window[d];
    p.strides[d] = g.strides[d];
    p.pad_lo[d] = g.pad_lo[d];
    p.base_dilation[d] = g.base_dilation[d];
    p.window_dilation[d] = g.window_dilation[d];
    p.inputs *= g.in[d];
    p.outputs *= g.out[d];
    p.taps *= g.window[d];
  }
  std::int64_t si = 1, so = 1;
  for (std::size_t d = r; d-- > 0;) {
    p.in_strides[d] = si;
    p.out_strides[d] = so;
    si *= g.in[d];
    so *= g.out[d];
  }
  return p;
}

/// Window w's position along each dim (row-major over the windows).
CANOPY_HD inline void window_index(const WindowParams& p, std::int64_t w, std::int64_t* o) {
  for (int d = p.rank; d-- > 0;) {
    o[d] = w % p.out[d];
    w /= p.out[d];
  }
}

/// The taps of the window at `o`, walked in window order (row-major over the window) without a
/// division per tap: `k` counts each dim's tap like an odometer. offset() is the operand offset
/// the current tap reads, or -1 when it lies on padding or a base-dilation hole. A position past
/// what int64 counts (a low padding near INT64_MIN) lies past the operand, as in the CPU loops.
struct WindowTaps {
  const WindowParams& p;
  const std::int64_t* o;
  std::int64_t k[kMaxWindowRank] = {};

  CANOPY_HD WindowTaps(const WindowParams& params, const std::int64_t* window_at) : p(params), o(window_at) {}
  CANOPY_HD std::int64_t offset() const {
    std::int64_t off = 0;
    for (int d = 0; d < p.rank; ++d) {
      std::int64_t pos = 0;
      if (!sub_fits(o[d] * p.strides[d] + k[d] * p.window_dilation[d], p.pad_lo[d], pos) || pos < 0) return -1;
      const std::int64_t bd = p.base_dilation[d];
      if (bd != 1) {  // the one division, and only with base dilation
        if (pos % bd != 0) return -1;
        pos /= bd;
      }
      if (pos >= p.in[d]) return -1;
      off += pos * p.in_strides[d];
    }
    return off;
  }
  /// The next tap: the last dim counts fastest.
  CANOPY_HD void next() {
    for (int d = p.rank; d-- > 0;) {
      if (++k[d] < p.window[d]) return;
      k[d] = 0;
    }
  }
};

/// reduce_window's starting value: -inf (lowest, false) for max, 0 for sum.
template <class C>
CANOPY_HD inline C window_init(WindowOp op) {
  if (op == WindowOp::sum) return C(0);
  if constexpr (std::is_same_v<C, bool>) return false;
  else if constexpr (std::is_floating_point_v<C>) return -std::numeric_limits<C>::infinity();
  else return std::numeric_limits<C>::lowest();
}

/// One step of reduce_window in compute type C: integers wrap, bool sums are `or`, a NaN wins max.
template <class C>
CANOPY_HD inline C window_combine(WindowOp op, C acc, C v) {
  if (op == WindowOp::sum) {
    if constexpr (std::is_same_v<C, bool>) return acc || v;
    else if constexpr (std::is_integral_v<C>) return static_cast<C>(wrapping_t<C>(acc) + wrapping_t<C>(v));
    else return acc + v;
  }
  if constexpr (std::is_floating_point_v<C>) {
    if (v != v || acc != acc) return acc != acc ? acc : v;
  }
  return v > acc ? v : acc;
}

/// Output element w of reduce_window: its window's taps combined in window order, padding skipped
/// (it holds the identity), in T's compute type.
template <class T>
CANOPY_HD inline T reduce_window_element(WindowOp op, const T* in, const WindowParams& p, std::int64_t w) {
  using C = compute_type_t<T>;
  std::int64_t o[kMaxWindowRank];
  window_index(p, w, o);
  C acc = window_init<C>(op);
  WindowTaps taps(p, o);
  for (std::int64_t t = 0; t < p.taps; ++t, taps.next()) {
    const std::int64_t off = taps.offset();
    if (off >= 0) acc = window_combine(op, acc, static_cast<C>(math::load(in[off])));
  }
  return math::store<T>(acc);
}

/// The operand offset window w selects: its first maximal element in window order; -1 when that
/// maximum is padding (-inf, which as the first tap wins a tie) or the window holds a NaN.
template <class T>
CANOPY_HD inline std::int64_t window_selection(const T* x, const WindowParams& p, std::int64_t w) {
  using C = compute_type_t<T>;
  std::int64_t o[kMaxWindowRank];
  window_index(p, w, o);
  C best = C(0);
  std::int64_t at = -1;
  bool nan = false;
  WindowTaps taps(p, o);
  for (std::int64_t t = 0; t < p.taps; ++t, taps.next()) {
    const std::int64_t off = taps.offset();
    if (off < 0) {  // padding: the maximum so far only as the first tap
      if (t == 0) best = -std::numeric_limits<C>::infinity();
      continue;
    }
    const C v = math::load(x[off]);
    nan = nan || v != v;
    if (t == 0 || v > best) {
      best = v;
      at = off;
    }
  }
  return nan ? -1 : at;
}

/// Output element w of select_and_gather_add: the tangent at window w's selection, or 0.
template <class T>
CANOPY_HD inline T gather_element(const T* tangent, const T* x, const WindowParams& p, std::int64_t w) {
  const std::int64_t s = window_selection(x, p, w);
  return s >= 0 ? tangent[s] : math::store<T>(0.0f);
}

/// Operand element e of select_and_scatter_add, given every window's selection `sel`: the source
/// values of the windows that selected e, added in window order and rounded to T after each
/// addition (as the CPU loop adds them one by one into its output). Visits each window that
/// covers e once: tap k along a dim belongs to window o when o * stride + k * window_dilation - pad_lo
/// is e's position in the base-dilated operand; taps are walked from the last, so o increases.
template <class T>
CANOPY_HD inline T scatter_element(const T* source, const std::int64_t* sel, const WindowParams& p, std::int64_t e) {
  std::int64_t at[kMaxWindowRank];  // e's position plus the low padding, per dim
  std::int64_t rem = e;
  for (int d = p.rank; d-- > 0;) {
    at[d] = rem % p.in[d] * p.base_dilation[d] + p.pad_lo[d];
    rem /= p.in[d];
  }
  T acc = math::store<T>(0.0f);
  std::int64_t k[kMaxWindowRank];  // each dim's tap, counting down from its last (an odometer)
  for (int d = 0; d < p.rank; ++d) k[d] = p.window[d] - 1;
  for (std::int64_t t = 0; t < p.taps; ++t) {
    std::int64_t w = 0;
    bool covers = true;
    for (int d = p.rank; d-- > 0;) {
      std::int64_t num = 0;
      if (!sub_fits(at[d], k[d] * p.window_dilation[d], num) || num < 0) {
        covers = false;
        break;
      }
      const std::int64_t s = p.strides[d];
      const std::int64_t q = s == 1 ? num : num / s;  // no division for a stride of 1
      if (q * s != num || q >= p.out[d]) {
        covers = false;
        break;
      }
      w += q * p.out_strides[d];
    }
    if (covers && sel[w] == e) acc = math::store<T>(math::load(acc) + math::load(source[w]));
    for (int d = p.rank; d-- > 0;) {
      if (--k[d] >= 0) break;
      k[d] = p.window[d] - 1;
    }
  }
  return acc;
}

// Tiled windows: max pooling as CNNs use it (2x2 with stride 2, no padding). Each window's taps
// are its own (a stride at least the window along every dim, no padding or dilation, every window
// inside the operand) and every offset fits 32 bits: the element functions below are the general
// ones above without padding checks, in 32-bit index arithmetic (a 64-bit division is several
// times the instructions of a 32-bit one) and without per-dim arrays indexed at run time (which a
// GPU keeps in local memory); max pooling's derivative runs a thread per window, which finds its
// selection once and writes each of its taps.

/// Whether p's windows tile the operand as above.
CANOPY_HD inline bool windows_tile(const WindowParams& p) {
  if (p.inputs >= (std::int64_t{1} << 31) || p.outputs >= (std::int64_t{1} << 31) || p.outputs == 0) return false;
  for (int d = 0; d < p.rank; ++d)
    if (p.strides[d] < p.window[d] || p.pad_lo[d] != 0 || p.base_dilation[d] != 1 || p.window_dilation[d] != 1 ||
        (p.out[d] - 1) * p.strides[d] + p.window[d] > p.in[d])
      return false;
  return true;
}

/// Whether tiled windows also cover every operand element (stride = window, and the windows reach
/// the end of every dim): then the derivative writes every element of its output.
CANOPY_HD inline bool windows_cover(const WindowParams& p) {
  for (int d = 0; d < p.rank; ++d)
    if (p.strides[d] != p.window[d] || p.out[d] * p.strides[d] != p.in[d]) return false;
  return true;
}

/// The operand offset of window w's first tap (tiled windows).
CANOPY_HD inline std::int32_t tiled_window_base(const WindowParams& p, std::int32_t w) {
  std::int32_t base = 0;
#pragma unroll
  for (int d = kMaxWindowRank - 1; d >= 0; --d) {
    if (d >= p.rank) continue;
    const auto out = static_cast<std::int32_t>(p.out[d]);
    base += w % out * static_cast<std::int32_t>(p.strides[d] * p.in_strides[d]);
    w /= out;
  }
  return base;
}

/// The operand offset of tap t (row-major over the window) of the tiled window at `base`.
CANOPY_HD inline std::int32_t tiled_tap(const WindowParams& p, std::int32_t base, std::int32_t t) {
#pragma unroll
  for (int d = kMaxWindowRank - 1; d >= 0; --d) {
    if (d >= p.rank) continue;
    const auto window = static_cast<std::int32_t>(p.window[d]);
    base += t % window * static_cast<std::int32_t>(p.in_strides[d]);
    t /= window;
  }
  return base;
}

/// reduce_window_element for tiled windows.
template <class T>
CANOPY_HD inline T reduce_window_tiled(WindowOp op, const T* in, const WindowParams& p, std::int32_t w) {
  using C = compute_type_t<T>;
  C acc = window_init<C>(op);
  const std::int32_t base = tiled_window_base(p, w);
  for (std::int32_t t = 0; t < p.taps; ++t) acc = window_combine(op, acc, static_cast<C>(math::load(in[tiled_tap(p, base, t)])));
  return math::store<T>(acc);
}

/// window_selection for the tiled window at `base`: its first maximal element in window order; -1
/// where the window holds a NaN.
template <class T>
CANOPY_HD inline std::int32_t window_selection_tiled(const T* x, const WindowParams& p, std::int32_t base) {
  using C = compute_type_t<T>;
  C best = C(0);
  std::int32_t at = -1;
  for (std::int32_t t = 0; t < p.taps; ++t) {
    const std::int32_t off = tiled_tap(p, base, t);
    const C v = math::load(x[off]);
    if (v != v) return -1;
    if (at < 0 || v > best) {
      best = v;
      at = off;
    }
  }
  return at;
}

/// Window w's share of select_and_scatter_add over tiled windows: each of its taps gets the one
/// addition scatter_element makes there, 0 + source[w] at its selection and 0 elsewhere. Operand
/// elements in no window are the caller's to zero (none where windows_cover).
template <class T>
CANOPY_HD inline void scatter_window_tiled(const T* source, const T* x, const WindowParams& p, std::int32_t w, T* out) {
  const std::int32_t base = tiled_window_base(p, w), sel = window_selection_tiled(x, p, base);
  const T zero = math::store<T>(0.0f);
  const T value = math::store<T>(math::load(zero) + math::load(source[w]));
  for (std::int32_t t = 0; t < p.taps; ++t) {
    const std::int32_t off = tiled_tap(p, base, t);
    out[off] = off == sel ? value : zero;
  }
}

}  // namespace canopy::kernels::cuda::nn
