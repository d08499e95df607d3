// f32 unary ops that oneDNN's JIT eltwise implements (vectorised exp/logistic/...), one cached
// primitive per (algorithm, alpha, beta, n). log stays on loops: oneDNN's f32 log loses ~1e-6
// absolute near x = 1 (millions of ulps of a tiny result), too far from XLA's. tanh does too:
// oneDNN's returns a denormal operand unchanged where canopy's kernels read it as 0 (as XLA's
// do), and the loops' tanh is XLA's own rational approximation.
#include "engine.hpp"

namespace canopy::kernels::cpu::onednn {
namespace {

struct EltwiseKey {
  int alg;
  float alpha, beta;
  std::int64_t n;
};

bool algorithm_for(UnaryOp op, dnnl::algorithm* alg, float* alpha, float* beta) {
  using A = dnnl::algorithm;
  *alpha = 0.f;
  *beta = 0.f;
  switch (op) {
    case UnaryOp::neg: *alg = A::eltwise_linear; *alpha = -1.f; return true;
    case UnaryOp::abs: *alg = A::eltwise_abs; return true;
    case UnaryOp::exp: *alg = A::eltwise_exp; return true;
    case UnaryOp::sqrt: *alg = A::eltwise_sqrt; return true;
    case UnaryOp::logistic: *alg = A::eltwise_logistic; return true;
    case UnaryOp::round_even: *alg = A::eltwise_round; return true;
    default: return false;
  }
}

}  // namespace

bool eltwise_f32(UnaryOp op, const float* in, float* out, std::int64_t n) {
  dnnl::algorithm alg;
  float alpha, beta;
  if (!algorithm_for(op, &alg, &alpha, &beta)) return false;
  thread_local LruCache<EltwiseKey, std::pair<dnnl::eltwise_forward, dnnl::memory::desc>> cache;
  EltwiseKey key{};
  key = {static_cast<int>(alg), alpha, beta, n};
  guarded("eltwise", [&] {
    auto& p = cache.get_or_emplace(key, [&] {
      dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg, md, alpha, beta);
      return std::pair{dnnl::eltwise_forward({d, engine()}), md};
    });
    dnnl::memory src(p.second, engine(), const_cast<float*>(in)), dst(p.second, engine(), out);
    p.first.execute(stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    stream().wait();
  });
  return true;
}

}  // namespace canopy::kernels::cpu::onednn
