// f32 add/sub/mul/div/max/min through oneDNN binary when the first operand has the output
// shape and the second broadcasts (size-1 dims); one cached primitive per shape pair.
#include <algorithm>

#include "engine.hpp"

namespace canopy::kernels::cpu::onednn {
namespace {

constexpr int kMaxRank = 6;  // oneDNN tensors are limited to DNNL_MAX_NDIMS (12); keep keys small

struct BinaryKey {
  int alg, rank;
  std::int64_t a[kMaxRank], b[kMaxRank];
};

bool algorithm_for(BinaryOp op, dnnl::algorithm* alg) {
  using A = dnnl::algorithm;
  switch (op) {
    case BinaryOp::add: *alg = A::binary_add; return true;
    case BinaryOp::sub: *alg = A::binary_sub; return true;
    case BinaryOp::mul: *alg = A::binary_mul; return true;
    case BinaryOp::div: *alg = A::binary_div; return true;
    case BinaryOp::max: *alg = A::binary_max; return true;
    case BinaryOp::min: *alg = A::binary_min; return true;
    default: return false;
  }
}

dnnl::memory::format_tag plain_tag(int rank) {
  using T = dnnl::memory::format_tag;
  constexpr T tags[] = {T::a, T::a, T::ab, T::abc, T::abcd, T::abcde, T::abcdef};
  return tags[rank];
}

}  // namespace

bool binary_f32(BinaryOp op, const float* a, const Shape& a_shape, const float* b, const Shape& b_shape, float* out,
                const Shape& out_shape) {
  dnnl::algorithm alg;
  if (!algorithm_for(op, &alg) || !(a_shape == out_shape)) return false;
  int rank = std::max<int>(1, static_cast<int>(out_shape.size()));
  if (rank > kMaxRank) return false;
  BinaryKey key{};
  key.alg = static_cast<int>(alg);
  key.rank = rank;
  int off_a = rank - static_cast<int>(a_shape.size()), off_b = rank - static_cast<int>(b_shape.size());
  for (int i = 0; i < rank; ++i) {
    key.a[i] = i < off_a ? 1 : a_shape[i - off_a];
    key.b[i] = i < off_b ? 1 : b_shape[i - off_b];
  }
  thread_local LruCache<BinaryKey, std::tuple<dnnl::binary, dnnl::memory::desc, dnnl::memory::desc>> cache;
  guarded("binary", [&] {
    auto& p = cache.get_or_emplace(key, [&] {
      dnnl::memory::dims ad(key.a, key.a + rank), bd(key.b, key.b + rank);
      dnnl::memory::desc amd(ad, dnnl::memory::data_type::f32, plain_tag(rank));
      dnnl::memory::desc bmd(bd, dnnl::memory::data_type::f32, plain_tag(rank));
      dnnl::binary::desc d(alg, amd, bmd, amd);
      return std::tuple{dnnl::binary({d, engine()}), amd, bmd};
    });
    auto& [prim, amd, bmd] = p;
    dnnl::memory am(amd, engine(), const_cast<float*>(a)), bm(bmd, engine(), const_cast<float*>(b)),
        cm(amd, engine(), out);
    prim.execute(stream(), {{DNNL_ARG_SRC_0, am}, {DNNL_ARG_SRC_1, bm}, {DNNL_ARG_DST, cm}});
    stream().wait();
  });
  return true;
}

}  // namespace canopy::kernels::cpu::onednn
