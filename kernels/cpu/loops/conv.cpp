// conv_general_dilated on plain loops: the path for f64/bf16 (oneDNN has no f64 convolution)
// and for what oneDNN's convolution cannot express (lhs dilation, negative padding, rank > 3).
// Parallel over (batch, output position); each window tap reads one input pixel for all groups.
#include <algorithm>
#include <vector>

#include "canopy/kernels/cpu_nn.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

template <class T>
void conv_typed(const T* lhs, const T* rhs, T* out, const ConvGeometry& g) {
  const std::size_t nsp = g.in_size.size();
  const std::int64_t out_pos = shape_size(g.out_size), taps = shape_size(g.window);
  const std::int64_t cg = g.in_features / g.groups, og = g.out_features / g.groups;
  const std::int64_t work = g.batch * out_pos;
  const bool par = work * taps * cg * g.out_features >= loops::kParallelMin;
  // Accumulate in double: this path is the slow, exact one (and the f32 fallback).
#pragma omp parallel if (par)
  {
    std::vector<double> acc(static_cast<std::size_t>(g.out_features));
    std::vector<std::int64_t> o(nsp), k(nsp);
#pragma omp for schedule(static)
    for (std::int64_t w = 0; w < work; ++w) {
      std::int64_t n = w / out_pos, rem = w % out_pos, out_off = n * g.out_strides[0];
      for (std::size_t d = nsp; d-- > 0;) {
        o[d] = rem % g.out_size[d];
        rem /= g.out_size[d];
        out_off += o[d] * g.out_strides[2 + d];
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (std::int64_t t = 0; t < taps; ++t) {
        std::int64_t r = t, lhs_off = n * g.lhs_strides[0], rhs_off = 0;
        bool inside = true;
        for (std::size_t d = nsp; d-- > 0;) {
          k[d] = r % g.window[d];
          r /= g.window[d];
          // Position in the lhs-dilated, padded input; only multiples of lhs_dilation hold data.
          std::int64_t p = o[d] * g.strides[d] + k[d] * g.rhs_dilation[d] - g.pad_lo[d];
          if (p < 0 || p % g.lhs_dilation[d] != 0 || p / g.lhs_dilation[d] >= g.in_size[d]) { inside = false; break; }
          lhs_off += p / g.lhs_dilation[d] * g.lhs_strides[2 + d];
          rhs_off += k[d] * g.rhs_strides[2 + d];
        }
        if (!inside) continue;
        for (std::int64_t grp = 0; grp < g.groups; ++grp)
          for (std::int64_t ci = 0; ci < cg; ++ci) {
            double x = static_cast<double>(loops::load(lhs[lhs_off + (grp * cg + ci) * g.lhs_strides[1]]));
            const T* wr = rhs + rhs_off + ci * g.rhs_strides[1] + grp * og * g.rhs_strides[0];
            double* a = acc.data() + grp * og;
            for (std::int64_t oc = 0; oc < og; ++oc) a[oc] += x * static_cast<double>(loops::load(wr[oc * g.rhs_strides[0]]));
          }
      }
      for (std::int64_t oc = 0; oc < g.out_features; ++oc)
        out[out_off + oc * g.out_strides[1]] = loops::store<T>(static_cast<loops::compute_t<T>>(acc[static_cast<std::size_t>(oc)]));
    }
  }
}

}  // namespace

void conv_loop(DType dtype, const void* lhs, const void* rhs, void* out, const ConvGeometry& g) {
  ensure_runtime();
  auto run = [&]<class T>(std::type_identity<T>) {
    conv_typed(static_cast<const T*>(lhs), static_cast<const T*>(rhs), static_cast<T*>(out), g);
  };
  switch (dtype) {
    case DType::f32: return run(std::type_identity<float>{});
    case DType::f64: return run(std::type_identity<double>{});
    case DType::bf16: return run(std::type_identity<bf16>{});
    case DType::f16: return run(std::type_identity<f16>{});
    default: return;  // the primitive admits floating dtypes only
  }
}

}  // namespace canopy::kernels::cpu
