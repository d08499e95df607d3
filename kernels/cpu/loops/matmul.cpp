// Batched matmul dispatch: f32 goes to the cached oneDNN primitive; other dtypes use a
// row-parallel i-k-j loop (accumulating bf16 in f32).
#include <cstdint>
#include <vector>

#include <xmmintrin.h>

#include "../onednn/engine.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
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
        else acc[j] = loops::add(acc[j], loops::mul(x, loops::load(br[j])));
      }
    }
    for (std::int64_t j = 0; j < n; ++j) c[row * n + j] = loops::store<T>(acc[j]);
  }
}

// k == 1: a batch of outer products (per-example weight gradients x^T g under vmap), pure output
// bandwidth. Outputs larger than the last-level cache are written with non-temporal stores,
// which skip the read-for-ownership of every line (oneDNN's stores pay it).
constexpr std::int64_t kStreamBytes = std::int64_t{32} << 20;

bool outer_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t n) {
  if (batch * m * n * 4 < kStreamBytes || n % 4 != 0 || reinterpret_cast<std::uintptr_t>(c) % 16 != 0) return false;
  loops::parallel_for(batch * m, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t row = r0; row < r1; ++row) {
      const __m128 x = _mm_set1_ps(a[row]);
      const float* br = b + (row / m) * n;
      float* cr = c + row * n;
      for (std::int64_t j = 0; j < n; j += 4) _mm_stream_ps(cr + j, _mm_mul_ps(x, _mm_loadu_ps(br + j)));
    }
    _mm_sfence();
  }, 1);
  return true;
}

}  // namespace

void matmul(DType dtype, const void* a, const void* b, void* c, std::int64_t batch, std::int64_t m, std::int64_t k,
            std::int64_t n) {
  ensure_runtime();
  if (batch * m * n == 0) return;
  if (dtype == DType::f32 && k == 1 &&
      outer_f32(static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c), batch, m, n))
    return;
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
  // With k == 1 a transposed operand has the plain layout's bytes: batched outer products.
  if (k == 1) return matmul(DType::f32, a, b, c, batch, m, k, n);
  onednn::matmul_f32(a, b, c, batch, m, k, n, trans_a, trans_b);
}

void matmul_f32_epilogue(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m,
                         std::int64_t k, std::int64_t n, bool trans_a, bool trans_b,
                         std::span<const EpilogueStep> epilogue, std::span<const float* const> operands) {
  ensure_runtime();
  if (batch * m * n == 0) return;
  onednn::matmul_f32(a, b, c, batch, m, k, n, trans_a, trans_b, epilogue, operands);
}

}  // namespace canopy::kernels::cpu
