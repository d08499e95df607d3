// reduce_window's kernel: f32 windows over the spatial dims of a channels-last (N, spatial..., C)
// or channels-first (N, C, spatial...) array run on a cached oneDNN pooling_forward (max, or
// average-including-padding times the window size for sum); everything else on loops/window.cpp.
#include <optional>

#include "../loops/loops.hpp"
#include "../loops/nn_loops.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "engine.hpp"

namespace canopy::kernels::cpu {
namespace {

using dims = dnnl::memory::dims;
using dnnl::memory;
constexpr std::size_t kMaxRank = 5;

struct PoolKey {
  std::int64_t op, rank, channels_last;
  std::int64_t in[kMaxRank], out[kMaxRank], win[kMaxRank], st[kMaxRank], pl[kMaxRank], pr[kMaxRank];
};

struct Prepared {
  dnnl::pooling_forward pool;
  memory::desc src, dst;
};

// Which layout oneDNN can take the window in: 1 = channels-last, 0 = channels-first, -1 = neither.
int onednn_layout(const WindowGeometry& g) {
  const std::size_t r = g.in.size();
  if (r < 3 || r > kMaxRank || shape_size(g.out) == 0 || shape_size(g.in) == 0) return -1;
  auto trivial = [&](std::size_t d) { return g.window[d] == 1 && g.strides[d] == 1 && g.pad_lo[d] == 0 && g.pad_hi[d] == 0; };
  for (std::size_t d = 0; d < r; ++d) {
    if (g.base_dilation[d] != 1 || g.window_dilation[d] != 1) return -1;
    // A window lying wholly in the padding would give oneDNN's value, not the identity: keep pads < window.
    if (g.pad_lo[d] < 0 || g.pad_hi[d] < 0 || g.pad_lo[d] >= g.window[d] || g.pad_hi[d] >= g.window[d]) return -1;
  }
  if (!trivial(0)) return -1;
  if (trivial(r - 1)) return 1;
  if (trivial(1)) return 0;
  return -1;
}

std::optional<Prepared> prepare(WindowOp op, const WindowGeometry& g, bool channels_last) {
  const std::size_t r = g.in.size();
  const std::size_t c = channels_last ? r - 1 : 1;
  dims src_d{g.in[0], g.in[c]}, dst_d{g.out[0], g.out[c]}, st, win, pl, pr;
  for (std::size_t d = 1; d < r; ++d) {
    if (d == c) continue;
    src_d.push_back(g.in[d]);
    dst_d.push_back(g.out[d]);
    st.push_back(g.strides[d]);
    win.push_back(g.window[d]);
    pl.push_back(g.pad_lo[d]);
    pr.push_back(g.pad_hi[d]);
  }
  using tag = memory::format_tag;
  const tag t = channels_last ? (r == 3 ? tag::nwc : r == 4 ? tag::nhwc : tag::ndhwc)
                              : (r == 3 ? tag::ncw : r == 4 ? tag::nchw : tag::ncdhw);
  memory::desc src(src_d, memory::data_type::f32, t), dst(dst_d, memory::data_type::f32, t);
  auto alg = op == WindowOp::max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding;
  dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src, dst, st, win, pl, pr);
  dnnl::pooling_forward::primitive_desc pd(desc, onednn::engine(), true);
  if (!pd) return std::nullopt;
  return Prepared{dnnl::pooling_forward(pd), src, dst};
}

bool pool_onednn(WindowOp op, const float* in, float* out, const WindowGeometry& g, bool channels_last) {
  thread_local onednn::LruCache<PoolKey, std::optional<Prepared>> cache;
  PoolKey k{};
  k.op = static_cast<std::int64_t>(op), k.rank = static_cast<std::int64_t>(g.in.size()), k.channels_last = channels_last;
  for (std::size_t d = 0; d < g.in.size(); ++d) {
    k.in[d] = g.in[d], k.out[d] = g.out[d], k.win[d] = g.window[d], k.st[d] = g.strides[d];
    k.pl[d] = g.pad_lo[d], k.pr[d] = g.pad_hi[d];
  }
  return onednn::guarded("reduce_window", [&] {
    auto& p = cache.get_or_emplace(k, [&] { return prepare(op, g, channels_last); });
    if (!p) return false;
    auto& eng = onednn::engine();
    memory src(p->src, eng, const_cast<float*>(in)), dst(p->dst, eng, out);
    p->pool.execute(onednn::stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    onednn::stream().wait();
    return true;
  });
}

// oneDNN's max pooling drops NaN while lax.max propagates it: such inputs take the loop path.
bool has_nan(const float* p, std::int64_t n) {
  int nan = 0;
#pragma omp parallel for simd reduction(| : nan) if (n >= loops::kParallelMin) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) nan |= p[i] != p[i];
  return nan != 0;
}

}  // namespace

void reduce_window(WindowOp op, DType dtype, const void* in, void* out, const WindowGeometry& g) {
  ensure_runtime();
  if (shape_size(g.out) == 0) return;
  int layout = dtype == DType::f32 ? onednn_layout(g) : -1;
  if (layout >= 0 && op == WindowOp::max && has_nan(static_cast<const float*>(in), shape_size(g.in))) layout = -1;
  if (layout >= 0 && pool_onednn(op, static_cast<const float*>(in), static_cast<float*>(out), g, layout == 1)) {
    if (op == WindowOp::sum) {
      // Average-including-padding divided by exactly the window size: scale back to the sum.
      const float n = static_cast<float>(shape_size(g.window));
      float* o = static_cast<float*>(out);
      const std::int64_t m = shape_size(g.out);
      loops::parallel_for(m, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) o[i] *= n;
      });
    }
    return;
  }
  loops::reduce_window(op, dtype, in, out, g);
}

}  // namespace canopy::kernels::cpu
