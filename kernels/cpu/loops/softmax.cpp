// Softmax / log-softmax along one axis on plain loops (log-softmax always; softmax for f64, bf16,
// and f32 when oneDNN does not apply): per row, subtract the max, exponentiate, normalise.
// log-softmax computes in double whatever the storage type, so each result is the correctly
// rounded f64 value stored (oneDNN's f32 logsoftmax was off by up to ~70 ulp: log_softmax([0, 0])
// gave -0.6931458 for -0.6931472).
#include <cmath>
#include <limits>

#include "canopy/kernels/cpu_runtime.hpp"
#include "loops.hpp"
#include "nn_loops.hpp"

namespace canopy::kernels::cpu::loops {
namespace {

template <class T, class C>
void softmax_typed(bool log, const T* in, T* out, const Shape& shape, int axis) {
  std::int64_t outer = 1, n = shape[static_cast<std::size_t>(axis)], inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  parallel_for(outer * inner, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t row = b; row < e; ++row) {
      const std::int64_t base = row / inner * n * inner + row % inner;
      C m = -std::numeric_limits<C>::infinity();
      for (std::int64_t j = 0; j < n; ++j) {
        C v = load(in[base + j * inner]);
        m = v > m || v != v ? v : m;
      }
      C s = 0;
      for (std::int64_t j = 0; j < n; ++j) s += std::exp(static_cast<C>(load(in[base + j * inner])) - m);
      const C ls = std::log(s);
      for (std::int64_t j = 0; j < n; ++j) {
        C z = static_cast<C>(load(in[base + j * inner])) - m;
        out[base + j * inner] = store<T>(log ? z - ls : std::exp(z) / s);
      }
    }
  }, kParallelMin / (n > 0 ? n : 1));
}

}  // namespace

void softmax(DType dtype, bool log, const void* in, void* out, const Shape& shape, int axis) {
  ensure_runtime();
  auto run = [&]<class T>(std::type_identity<T>) {
    if (log || std::is_same_v<T, double>) softmax_typed<T, double>(log, static_cast<const T*>(in), static_cast<T*>(out), shape, axis);
    else softmax_typed<T, float>(log, static_cast<const T*>(in), static_cast<T*>(out), shape, axis);
  };
  switch (dtype) {
    case DType::f32: return run(std::type_identity<float>{});
    case DType::f64: return run(std::type_identity<double>{});
    case DType::bf16: return run(std::type_identity<bf16>{});
    case DType::f16: return run(std::type_identity<f16>{});
    default: return;  // the primitive admits floating dtypes only
  }
}

}  // namespace canopy::kernels::cpu::loops
