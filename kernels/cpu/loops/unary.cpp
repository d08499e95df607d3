// Elementwise unary kernels: oneDNN eltwise for large f32 inputs where it has the algorithm,
// otherwise one OpenMP-SIMD loop per (op, dtype), all instantiated in this translation unit.
#include <cmath>
#include <stdexcept>

#include "../../cuda/element_math.hpp"  // denormal_as_zero, shared with the GPU kernels
#include "../onednn/engine.hpp"
#include "canopy/kernels/fused.hpp"
#include "erf_inv.hpp"
#include "canopy/kernels/runtime.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

using loops::compute_t;

/// The operand of a math-library function (cuda::math::denormal_as_zero says why).
template <class C>
inline C daz(C x) {
  return cuda::math::denormal_as_zero(x);
}

template <class T, class O, class F>
void map(const T* in, O* out, std::int64_t n, F f) {
  loops::parallel_for(n, [&](std::int64_t b, std::int64_t e) {
#pragma omp simd
    for (std::int64_t i = b; i < e; ++i) out[i] = loops::store<O>(f(loops::load(in[i])));
  });
}

template <class T>
void unary_typed(UnaryOp op, const T* in, void* outv, std::int64_t n) {
  using C = compute_t<T>;
  T* out = static_cast<T*>(outv);
  if constexpr (std::is_same_v<T, bool>) {
    if (op == UnaryOp::logical_not) return map(in, out, n, [](bool x) { return !x; });
  } else if constexpr (std::is_integral_v<T>) {
    // Negation wraps in unsigned arithmetic, so the lowest value maps to itself without UB.
    using U = std::make_unsigned_t<C>;
    switch (op) {
      case UnaryOp::neg: return map(in, out, n, [](C x) { return static_cast<C>(U(0) - U(x)); });
      case UnaryOp::abs:
        return map(in, out, n, [](C x) { return std::is_signed_v<C> && x < 0 ? static_cast<C>(U(0) - U(x)) : x; });
      case UnaryOp::sign: return map(in, out, n, [](C x) { return static_cast<C>((x > 0) - (x < 0)); });
      case UnaryOp::logical_not: return map(in, out, n, [](C x) { return static_cast<C>(~x); });
      default: break;
    }
  } else {
    // The math library's functions read their operand's bits (or pass a tiny one through):
    // daz gives them denormals as the flushed arithmetic sees them.
    switch (op) {
      case UnaryOp::neg: return map(in, out, n, [](C x) { return -x; });
      case UnaryOp::abs: return map(in, out, n, [](C x) { return std::fabs(x); });
      case UnaryOp::sign:
        return map(in, out, n, [](C x) { return x > 0 ? C(1) : (x < 0 ? C(-1) : x); });
      case UnaryOp::exp: return map(in, out, n, [](C x) { return std::exp(daz(x)); });
      case UnaryOp::log: return map(in, out, n, [](C x) { return std::log(daz(x)); });
      case UnaryOp::log1p: return map(in, out, n, [](C x) { return std::log1p(daz(x)); });
      case UnaryOp::expm1: return map(in, out, n, [](C x) { return std::expm1(daz(x)); });
      case UnaryOp::sqrt: return map(in, out, n, [](C x) { return std::sqrt(x); });
      case UnaryOp::rsqrt: return map(in, out, n, [](C x) { return C(1) / std::sqrt(x); });
      case UnaryOp::tanh: return map(in, out, n, [](C x) { return std::tanh(daz(x)); });
      case UnaryOp::logistic: return map(in, out, n, [](C x) { return C(1) / (C(1) + std::exp(-daz(x))); });
      case UnaryOp::sin: return map(in, out, n, [](C x) { return std::sin(daz(x)); });
      case UnaryOp::cos: return map(in, out, n, [](C x) { return std::cos(daz(x)); });
      case UnaryOp::floor: return map(in, out, n, [](C x) { return std::floor(x); });
      case UnaryOp::ceil: return map(in, out, n, [](C x) { return std::ceil(x); });
      case UnaryOp::round_even: return map(in, out, n, [](C x) { return std::nearbyint(x); });
      case UnaryOp::round_away: return map(in, out, n, [](C x) { return std::round(x); });
      case UnaryOp::erf: return map(in, out, n, [](C x) { return std::erf(daz(x)); });
      case UnaryOp::tan: return map(in, out, n, [](C x) { return std::tan(daz(x)); });
      case UnaryOp::exp2: return map(in, out, n, [](C x) { return std::exp2(daz(x)); });
      case UnaryOp::asin: return map(in, out, n, [](C x) { return std::asin(daz(x)); });
      case UnaryOp::acos: return map(in, out, n, [](C x) { return std::acos(daz(x)); });
      case UnaryOp::atan: return map(in, out, n, [](C x) { return std::atan(daz(x)); });
      case UnaryOp::asinh: return map(in, out, n, [](C x) { return std::asinh(daz(x)); });
      case UnaryOp::acosh: return map(in, out, n, [](C x) { return std::acosh(daz(x)); });
      case UnaryOp::atanh: return map(in, out, n, [](C x) { return std::atanh(daz(x)); });
      case UnaryOp::sinh: return map(in, out, n, [](C x) { return std::sinh(daz(x)); });
      case UnaryOp::cosh: return map(in, out, n, [](C x) { return std::cosh(daz(x)); });
      case UnaryOp::cbrt: return map(in, out, n, [](C x) { return std::cbrt(daz(x)); });
      case UnaryOp::erf_inv:
        if constexpr (std::is_same_v<C, double>) return map(in, out, n, [](C x) { return special::erf_inv_f64(daz(x)); });
        else return map(in, out, n, [](C x) { return special::erf_inv_f32(daz(x)); });
      case UnaryOp::is_finite:
        return map(in, static_cast<bool*>(outv), n, [](C x) { return std::isfinite(x); });
      default: break;
    }
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
