// reduce_window_{max,sum} on plain loops (any rank, dtype, padding and dilation), parallel over
// output elements. Padding contributes the reduction's identity, as in lax.reduce_window.
#include <limits>
#include <vector>

#include "canopy/kernels/cpu_runtime.hpp"
#include "loops.hpp"
#include "nn_loops.hpp"

namespace canopy::kernels::cpu::loops {
namespace {

template <class T>
void window_typed(WindowOp op, const T* in, T* out, const WindowGeometry& g) {
  using C = compute_t<T>;
  const std::size_t r = g.in.size();
  const std::int64_t nout = shape_size(g.out), taps = shape_size(g.window);
  const Shape in_st = contiguous_strides(g.in);
  C init = C(0);
  if (op == WindowOp::max) {
    if constexpr (std::is_floating_point_v<C>) init = -std::numeric_limits<C>::infinity();
    else if constexpr (std::is_same_v<C, bool>) init = false;
    else init = std::numeric_limits<C>::lowest();
  }
  const bool par = nout * taps >= kParallelMin;
#pragma omp parallel if (par)
  {
    std::vector<std::int64_t> o(r), k(r);
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < nout; ++i) {
      std::int64_t rem = i;
      for (std::size_t d = r; d-- > 0;) { o[d] = rem % g.out[d]; rem /= g.out[d]; }
      C acc = init;
      for (std::int64_t t = 0; t < taps; ++t) {
        std::int64_t tr = t, off = 0;
        bool inside = true;
        for (std::size_t d = r; d-- > 0 && inside;) {
          k[d] = tr % g.window[d];
          tr /= g.window[d];
          // Position in the base-dilated, padded operand; only multiples of base_dilation hold data.
          // The window's offset fits in int64 (the shape rule bounds it by the padded extent);
          // minus a low padding near INT64_MIN it may not, and then it lies past the operand.
          std::int64_t p = 0;
          inside = !__builtin_sub_overflow(o[d] * g.strides[d] + k[d] * g.window_dilation[d], g.pad_lo[d], &p) &&
                   p >= 0 && p % g.base_dilation[d] == 0 && p / g.base_dilation[d] < g.in[d];
          if (!inside) break;
          off += p / g.base_dilation[d] * in_st[d];
        }
        if (!inside) continue;
        C v = load(in[off]);
        if (op == WindowOp::sum) {
          if constexpr (std::is_same_v<C, bool>) acc = acc || v;
          else acc = loops::add(acc, v);
        } else if constexpr (std::is_floating_point_v<C>) {
          if (v != v || acc != acc) acc = acc != acc ? acc : v;  // NaN propagates, as lax.max
          else acc = v > acc ? v : acc;
        } else {
          acc = v > acc ? v : acc;
        }
      }
      out[i] = store<T>(acc);
    }
  }
}

}  // namespace

void reduce_window(WindowOp op, DType dtype, const void* in, void* out, const WindowGeometry& g) {
  ensure_runtime();
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    window_typed(op, static_cast<const T*>(in), static_cast<T*>(out), g);
  });
}

}  // namespace canopy::kernels::cpu::loops
