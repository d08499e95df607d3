// dot_general's f32 kernel: a oneDNN matmul primitive created once per (batch, m, k, n) and
// reused from the LRU cache; memory objects wrap the arrays' buffers (no copies).
#include "engine.hpp"

namespace canopy::kernels::cpu::onednn {
namespace {

struct MatmulKey {
  std::int64_t batch, m, k, n;
};

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
constexpr auto f32 = dnnl::memory::data_type::f32;

struct Prepared {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c;
};

}  // namespace

void matmul_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
                std::int64_t n) {
  thread_local LruCache<MatmulKey, Prepared> cache;
  MatmulKey key{batch, m, k, n};
  guarded("matmul", [&] {
    auto& p = cache.get_or_emplace(key, [&] {
      dnnl::memory::desc ad(batch == 1 ? dims{m, k} : dims{batch, m, k}, f32, batch == 1 ? tag::ab : tag::abc);
      dnnl::memory::desc bd(batch == 1 ? dims{k, n} : dims{batch, k, n}, f32, batch == 1 ? tag::ab : tag::abc);
      dnnl::memory::desc cd(batch == 1 ? dims{m, n} : dims{batch, m, n}, f32, batch == 1 ? tag::ab : tag::abc);
      dnnl::matmul::primitive_desc pd({ad, bd, cd}, engine());
      return Prepared{dnnl::matmul(pd), ad, bd, cd};
    });
    auto& eng = engine();
    dnnl::memory am(p.a, eng, const_cast<float*>(a)), bm(p.b, eng, const_cast<float*>(b)), cm(p.c, eng, c);
    p.prim.execute(stream(), {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    stream().wait();
  });
}

}  // namespace canopy::kernels::cpu::onednn
