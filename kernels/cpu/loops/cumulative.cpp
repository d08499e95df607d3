// Cumulative reductions along one axis: the operand seen as [outer, n, inner]; each thread takes
// a range of (outer, inner) columns and walks the axis once, combining row i with the stored
// result of row i - 1 (i + 1 when reversed) for a run of adjacent columns in one vector loop.
#include <algorithm>
#include <cmath>

#include "canopy/kernels/cpu.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

using loops::compute_t;

template <class T, class F>
void scan(const T* in, T* out, std::int64_t outer, std::int64_t n, std::int64_t inner, bool reverse, F combine) {
  // Columns c = o * inner + j; a thread's range is cut into runs of one o.
  loops::parallel_for(outer * inner, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t c = lo; c < hi;) {
      const std::int64_t o = c / inner, j0 = c % inner, j1 = std::min(inner, j0 + (hi - c));
      const T* x = in + o * n * inner;
      T* y = out + o * n * inner;
      for (std::int64_t k = 0; k < n; ++k) {
        const std::int64_t i = reverse ? n - 1 - k : k, row = i * inner;
        if (k == 0) {
          std::copy(x + row + j0, x + row + j1, y + row + j0);
          continue;
        }
        const std::int64_t prev = (reverse ? i + 1 : i - 1) * inner;
#pragma omp simd
        for (std::int64_t j = j0; j < j1; ++j)
          y[row + j] = loops::store<T>(combine(loops::load(y[prev + j]), loops::load(x[row + j])));
      }
      c += j1 - j0;
    }
  }, std::max<std::int64_t>(1, loops::kParallelMin / std::max<std::int64_t>(1, n)));
}

template <class T>
void cumulative_typed(CumulativeOp op, const T* in, T* out, std::int64_t outer, std::int64_t n, std::int64_t inner,
                      bool reverse) {
  using C = compute_t<T>;
  auto run = [&](auto f) { scan(in, out, outer, n, inner, reverse, f); };
  switch (op) {
    case CumulativeOp::sum: return run([](C a, C b) { return loops::add(a, b); });
    case CumulativeOp::prod: return run([](C a, C b) { return loops::mul(a, b); });
    case CumulativeOp::max:
      if constexpr (std::is_floating_point_v<C>)  // NaN-propagating, like lax.max
        return run([](C a, C b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); });
      else
        return run([](C a, C b) { return a > b ? a : b; });
    case CumulativeOp::min:
      if constexpr (std::is_floating_point_v<C>)
        return run([](C a, C b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); });
      else
        return run([](C a, C b) { return a < b ? a : b; });
  }
}

}  // namespace

void cumulative(CumulativeOp op, DType dtype, const void* in, void* out, const Shape& shape, int axis, bool reverse) {
  ensure_runtime();
  std::int64_t outer = 1, inner = 1;
  const std::int64_t n = shape[static_cast<std::size_t>(axis)];
  for (int d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  if (outer * n * inner == 0) return;
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (!std::is_same_v<T, bool>)
      cumulative_typed<T>(op, static_cast<const T*>(in), static_cast<T*>(out), outer, n, inner, reverse);
  });
}

}  // namespace canopy::kernels::cpu
