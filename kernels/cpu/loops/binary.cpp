// Elementwise binary kernels with numpy broadcasting: oneDNN binary for large f32 operands
// where it applies, else loops (flat, scalar-operand, or collapsed strided rows).
#include <climits>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "../../cuda/element_math.hpp"  // integer pow, div and rem, denormal_as_zero: shared with the GPU kernels
#include "../onednn/engine.hpp"
#include "canopy/kernels/runtime.hpp"
#include "broadcast_layout.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

using loops::compute_t;
using loops::load;
using loops::store;
namespace math = cuda::math;
template <class C>
inline C daz(C x) {
  return math::denormal_as_zero(x);
}

template <class T, class O, class F>
void broadcast_loop(F f, const T* a, const Shape& as, const T* b, const Shape& bs, O* out, const Shape& os) {
  std::int64_t n = shape_size(os);
  if (n == 0) return;
  bool par = n >= loops::kParallelMin;
  std::int64_t na = shape_size(as), nb = shape_size(bs);
  if (na == n && nb == n) {
loops::parallel_for(n, [&](std::int64_t lo, std::int64_t hi) {
#pragma omp simd
      for (std::int64_t i = lo; i < hi; ++i) out[i] = store<O>(f(load(a[i]), load(b[i])));
    });
    return;
  }
  if (na == n && nb == 1) {
    auto y = load(b[0]);
loops::parallel_for(n, [&](std::int64_t lo, std::int64_t hi) {
#pragma omp simd
      for (std::int64_t i = lo; i < hi; ++i) out[i] = store<O>(f(load(a[i]), y));
    });
    return;
  }
  if (na == 1 && nb == n) {
    auto x = load(a[0]);
loops::parallel_for(n, [&](std::int64_t lo, std::int64_t hi) {
#pragma omp simd
      for (std::int64_t i = lo; i < hi; ++i) out[i] = store<O>(f(x, load(b[i])));
    });
    return;
  }
  BroadcastLayout L = collapse_broadcast(as, bs, os);
  int r = static_cast<int>(L.dims.size());
  std::int64_t inner = L.dims.back(), ia = L.sa.back(), ib = L.sb.back(), rows = n / inner;
  loops::parallel_for(rows, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t row = lo; row < hi; ++row) {
      std::int64_t oa = 0, ob = 0, rem = row;
      for (int d = r - 2; d >= 0; --d) {
        std::int64_t idx = rem % L.dims[d];
        rem /= L.dims[d];
        oa += idx * L.sa[d];
        ob += idx * L.sb[d];
      }
      O* o = out + row * inner;
      for (std::int64_t j = 0; j < inner; ++j) o[j] = store<O>(f(load(a[oa + j * ia]), load(b[ob + j * ib])));
    }
  }, par ? 2 : rows + 1);
}

template <class T>
void binary_typed(BinaryOp op, const T* a, const Shape& as, const T* b, const Shape& bs, void* outv, const Shape& os) {
  using C = compute_t<T>;
  T* out = static_cast<T*>(outv);
  bool* bout = static_cast<bool*>(outv);
  auto run = [&](auto f) { broadcast_loop(f, a, as, b, bs, out, os); };
  auto cmp = [&](auto f) { broadcast_loop(f, a, as, b, bs, bout, os); };
  switch (op) {
    case BinaryOp::eq: return cmp([](C x, C y) { return x == y; });
    case BinaryOp::ne: return cmp([](C x, C y) { return x != y; });
    case BinaryOp::lt: return cmp([](C x, C y) { return x < y; });
    case BinaryOp::le: return cmp([](C x, C y) { return x <= y; });
    case BinaryOp::gt: return cmp([](C x, C y) { return x > y; });
    case BinaryOp::ge: return cmp([](C x, C y) { return x >= y; });
    default: break;
  }
  if constexpr (std::is_integral_v<C>) {
    switch (op) {
      case BinaryOp::logical_and: return run([](C x, C y) { return static_cast<C>(x & y); });
      case BinaryOp::logical_or: return run([](C x, C y) { return static_cast<C>(x | y); });
      case BinaryOp::logical_xor: return run([](C x, C y) { return static_cast<C>(x ^ y); });
      default: break;
    }
  }
  if constexpr (std::is_same_v<C, bool>) {
    switch (op) {
      case BinaryOp::max: return run([](C x, C y) { return x || y; });
      case BinaryOp::min: return run([](C x, C y) { return x && y; });
      default: break;
    }
  } else if constexpr (std::is_integral_v<C>) {
    // Wrapping arithmetic in unsigned avoids signed-overflow UB; division by 0 as XLA's.
    using U = wrapping_t<C>;
    switch (op) {
      case BinaryOp::add: return run([](C x, C y) { return loops::add(x, y); });
      case BinaryOp::sub: return run([](C x, C y) { return static_cast<C>(U(x) - U(y)); });
      case BinaryOp::mul: return run([](C x, C y) { return loops::mul(x, y); });
      case BinaryOp::div: return run([](C x, C y) { return math::int_div(x, y); });
      case BinaryOp::rem: return run([](C x, C y) { return math::int_rem(x, y); });
      case BinaryOp::max: return run([](C x, C y) { return x > y ? x : y; });
      case BinaryOp::min: return run([](C x, C y) { return x < y ? x : y; });
      case BinaryOp::pow: return run([](C x, C y) { return math::int_pow(x, y); });
      default: break;
    }
  } else {
    switch (op) {
      case BinaryOp::add: return run([](C x, C y) { return x + y; });
      case BinaryOp::sub: return run([](C x, C y) { return x - y; });
      case BinaryOp::mul: return run([](C x, C y) { return x * y; });
      case BinaryOp::div: return run([](C x, C y) { return x / y; });
      // The math library reads its operands' bits: denormals as the flushed arithmetic sees them.
      case BinaryOp::rem: return run([](C x, C y) { return std::fmod(daz(x), daz(y)); });
      case BinaryOp::pow: return run([](C x, C y) { return std::pow(daz(x), daz(y)); });
      case BinaryOp::atan2: return run([](C x, C y) { return std::atan2(daz(x), daz(y)); });
      // NaN-propagating, like lax.max/min.
      case BinaryOp::max: return run([](C x, C y) { return x != x ? x : (y != y ? y : (x > y ? x : y)); });
      case BinaryOp::min: return run([](C x, C y) { return x != x ? x : (y != y ? y : (x < y ? x : y)); });
      default: break;
    }
  }
  throw std::logic_error("canopy kernels: binary op not defined for this dtype");  // abstract_eval rejects earlier
}

}  // namespace

void binary(BinaryOp op, DType dtype, const void* a, const Shape& a_shape, const void* b, const Shape& b_shape,
            void* out, const Shape& out_shape) {
  ensure_runtime();
  // oneDNN binary's max/min do not propagate NaN the way lax does, so they stay on loops.
  if (dtype == DType::f32 && op != BinaryOp::max && op != BinaryOp::min && shape_size(out_shape) >= loops::kOnednnMin &&
      onednn::binary_f32(op, static_cast<const float*>(a), a_shape, static_cast<const float*>(b), b_shape,
                         static_cast<float*>(out), out_shape))
    return;
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    binary_typed<T>(op, static_cast<const T*>(a), a_shape, static_cast<const T*>(b), b_shape, out, out_shape);
  });
}

}  // namespace canopy::kernels::cpu
