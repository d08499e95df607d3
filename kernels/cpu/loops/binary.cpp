// Elementwise binary kernels with numpy broadcasting: oneDNN binary for large f32 operands
// where it applies, else loops (flat, scalar-operand, or collapsed strided rows).
#include <climits>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "../onednn/engine.hpp"
#include "canopy/kernels/broadcast_layout.hpp"
#include "canopy/kernels/element_math.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

using loops::compute_t;
using loops::load;
using loops::store;

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

// One loop per op of CANOPY_BINARY_OPS defined for the dtype, each element math::binary_<op>.
template <class T>
void binary_typed(BinaryOp op, const T* a, const Shape& as, const T* b, const Shape& bs, void* out, const Shape& os) {
  using C = compute_t<T>;
  switch (op) {
#define CANOPY_BINARY_LOOP(name, ...)                                                                            \
  case BinaryOp::name:                                                                                           \
    if constexpr (math::binary_defined<C>(BinaryOp::name)) {                                                     \
      /* comparisons write bool */                                                                               \
      using O = std::conditional_t<is_comparison(BinaryOp::name), bool, T>;                                      \
      return broadcast_loop([](C x, C y) { return math::binary_##name(x, y); }, a, as, b, bs, static_cast<O*>(out), os); \
    }                                                                                                            \
    break;
    CANOPY_BINARY_OPS(CANOPY_BINARY_LOOP)
#undef CANOPY_BINARY_LOOP
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
