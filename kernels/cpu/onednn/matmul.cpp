// dot_general's f32 kernel: a oneDNN matmul primitive created once per (batch, m, k, n) and
// reused from the LRU cache; memory objects wrap the arrays' buffers (no copies).
#include "engine.hpp"

namespace canopy::kernels::cpu::onednn {
namespace {

struct MatmulKey {
  std::int64_t batch, m, k, n, trans_a, trans_b;  // int64 flags: no padding bytes in the hashed key
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
                std::int64_t n, bool trans_a, bool trans_b) {
  thread_local LruCache<MatmulKey, Prepared> cache;
  MatmulKey key{batch, m, k, n, trans_a, trans_b};
  guarded("matmul", [&] {
    auto& p = cache.get_or_emplace(key, [&] {
      // A transposed operand is described by its strides (format tags ba / acb): oneDNN reads it
      // in place, so x^T @ g and g @ w^T in a backward pass copy nothing.
      const bool b1 = batch == 1;
      auto desc = [&](std::int64_t rows, std::int64_t cols, bool transposed) {
        const tag t = b1 ? (transposed ? tag::ba : tag::ab) : (transposed ? tag::acb : tag::abc);
        return dnnl::memory::desc(b1 ? dims{rows, cols} : dims{batch, rows, cols}, f32, t);
      };
      dnnl::memory::desc ad = desc(m, k, trans_a), bd = desc(k, n, trans_b), cd = desc(m, n, false);
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
