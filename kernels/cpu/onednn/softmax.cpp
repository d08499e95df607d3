// softmax / log_softmax kernel: f32 softmax runs on a cached oneDNN softmax_forward over the
// requested axis of the row-major array; log_softmax and other dtypes on loops/softmax.cpp
// (oneDNN 2.6's f32 logsoftmax is off by tens of ulp).
#include <limits>
#include <optional>

#include "../loops/nn_loops.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "engine.hpp"

namespace canopy::kernels::cpu {
namespace {

constexpr std::size_t kMaxRank = 8;

struct SoftmaxKey {
  std::int64_t rank, axis, dims[kMaxRank];
};

struct Prepared {
  dnnl::primitive prim;
  dnnl::memory::desc md;
};

std::optional<Prepared> prepare(const Shape& shape, int axis) {
  dnnl::memory::dims d(shape.begin(), shape.end()), st;
  for (auto s : contiguous_strides(shape)) st.push_back(s);
  dnnl::memory::desc md(d, dnnl::memory::data_type::f32, st);
  auto& eng = onednn::engine();
  constexpr auto inference = dnnl::prop_kind::forward_inference;
  dnnl::softmax_forward::primitive_desc pd(dnnl::softmax_forward::desc(inference, md, axis), eng, true);
  if (!pd) return std::nullopt;
  return Prepared{dnnl::softmax_forward(pd), md};
}

bool softmax_onednn(const float* in, float* out, const Shape& shape, int axis) {
  thread_local onednn::LruCache<SoftmaxKey, std::optional<Prepared>> cache;
  SoftmaxKey k{};
  k.rank = static_cast<std::int64_t>(shape.size()), k.axis = axis;
  for (std::size_t i = 0; i < shape.size(); ++i) k.dims[i] = shape[i];
  return onednn::guarded("softmax", [&] {
    auto& p = cache.get_or_emplace(k, [&] { return prepare(shape, axis); });
    if (!p) return false;
    auto& eng = onednn::engine();
    dnnl::memory src(p->md, eng, const_cast<float*>(in)), dst(p->md, eng, out);
    p->prim.execute(onednn::stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    onednn::stream().wait();
    return true;
  });
}

// oneDNN's softmax lets NaN and +inf entries drop out of the row sum, where JAX's formula makes the
// whole row NaN: rows like that take the loop path (one read of the input decides).
bool has_nan_or_inf(const float* p, std::int64_t n) {
  int bad = 0;
#pragma omp parallel for simd reduction(| : bad) if (n >= (1 << 15)) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) bad |= !(p[i] < std::numeric_limits<float>::infinity());
  return bad != 0;
}

}  // namespace

void softmax(DType dtype, bool log, const void* in, void* out, const Shape& shape, int axis) {
  ensure_runtime();
  if (shape_size(shape) == 0) return;
  if (dtype == DType::f32 && !log && shape.size() <= kMaxRank &&
      !has_nan_or_inf(static_cast<const float*>(in), shape_size(shape)) &&
      softmax_onednn(static_cast<const float*>(in), static_cast<float*>(out), shape, axis))
    return;
  loops::softmax(dtype, log, in, out, shape, axis);
}

}  // namespace canopy::kernels::cpu
