// Batched matmul dispatch: f32 goes to the cached oneDNN primitive; other dtypes use a
// row-parallel i-k-j loop (accumulating bf16 in f32).
#include <vector>

#include "../onednn/engine.hpp"
#include "canopy/kernels/runtime.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

template <class T>
void matmul_loop(const T* a, const T* b, T* c, std::int64_t batch, std::int64_t m, std::int64_t k, std::int64_t n) {
  using C = loops::compute_t<T>;
#pragma omp parallel for if (batch * m * k * n >= loops::kParallelMin) schedule(static)
  for (std::int64_t row = 0; row < batch * m; ++row) {
    std::int64_t bi = row / m;
    const T* ar = a + row * k;
    const T* bb = b + bi * k * n;
    std::vector<C> acc(static_cast<std::size_t>(n), C(0));
    for (std::int64_t p = 0; p < k; ++p) {
      C x = loops::load(ar[p]);
      const T* br = bb + p * n;
      for (std::int64_t j = 0; j < n; ++j) {
        if constexpr (std::is_same_v<C, bool>) acc[j] = acc[j] || (x && br[j]);
        else acc[j] = static_cast<C>(acc[j] + x * loops::load(br[j]));
      }
    }
    for (std::int64_t j = 0; j < n; ++j) c[row * n + j] = loops::store<T>(acc[j]);
  }
}

}  // namespace

void matmul(DType dtype, const void* a, const void* b, void* c, std::int64_t batch, std::int64_t m, std::int64_t k,
            std::int64_t n) {
  ensure_runtime();
  if (batch * m * n == 0) return;
  if (dtype == DType::f32 && k > 0) {
    onednn::matmul_f32(static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c), batch, m,
                       k, n, false, false);
    return;
  }
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    matmul_loop(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), batch, m, k, n);
  });
}

void matmul_f32_transposed(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m,
                           std::int64_t k, std::int64_t n, bool trans_a, bool trans_b) {
  ensure_runtime();
  if (batch * m * n == 0) return;
  onednn::matmul_f32(a, b, c, batch, m, k, n, trans_a, trans_b);
}

}  // namespace canopy::kernels::cpu
