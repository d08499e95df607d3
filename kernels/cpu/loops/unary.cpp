// Elementwise unary kernels: oneDNN eltwise for large f32 inputs where it has the algorithm,
// otherwise one OpenMP-SIMD loop per (op, dtype), all instantiated in this translation unit.
#include <stdexcept>

#include "../onednn/engine.hpp"
#include "canopy/kernels/element_math.hpp"
#include "canopy/kernels/cpu_fused.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

using loops::compute_t;

template <class T, class O, class F>
void map(const T* in, O* out, std::int64_t n, F f) {
  loops::parallel_for(n, [&](std::int64_t b, std::int64_t e) {
#pragma omp simd
    for (std::int64_t i = b; i < e; ++i) out[i] = loops::store<O>(f(loops::load(in[i])));
  });
}

// One loop per op of CANOPY_UNARY_OPS defined for the dtype, each element math::unary_<op>.
template <class T>
void unary_typed(UnaryOp op, const T* in, void* out, std::int64_t n) {
  using C = compute_t<T>;
  switch (op) {
#define CANOPY_UNARY_LOOP(name, ...)                                                                 \
  case UnaryOp::name:                                                                                \
    if constexpr (math::unary_defined<C>(UnaryOp::name)) {                                           \
      if constexpr (UnaryOp::name == UnaryOp::is_finite)                                             \
        return map(in, static_cast<bool*>(out), n, [](C x) { return math::unary_##name(x) != C(0); }); \
      else                                                                                           \
        return map(in, static_cast<T*>(out), n, [](C x) { return math::unary_##name(x); });         \
    }                                                                                                \
    break;
    CANOPY_UNARY_OPS(CANOPY_UNARY_LOOP)
#undef CANOPY_UNARY_LOOP
  }
  throw std::logic_error("canopy kernels: unary op not defined for this dtype");  // abstract_eval rejects earlier
}

}  // namespace

void unary(UnaryOp op, DType dtype, const void* in, void* out, std::int64_t n) {
  ensure_runtime();
  if (dtype == DType::f32 && n >= loops::kOnednnMin &&
      onednn::eltwise_f32(op, static_cast<const float*>(in), static_cast<float*>(out), n))
    return;
  // No oneDNN algorithm: f32 erf_inv and tanh run the fused kernels' vectorised forms (libmvec's
  // log1pf; XLA's rational tanh).
  if (dtype == DType::f32 && (op == UnaryOp::erf_inv || (op == UnaryOp::tanh && n >= loops::kOnednnMin)))
    return unary_f32_vector_math(op, static_cast<const float*>(in), static_cast<float*>(out), n);
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) { unary_typed<T>(op, static_cast<const T*>(in), out, n); });
}

}  // namespace canopy::kernels::cpu
