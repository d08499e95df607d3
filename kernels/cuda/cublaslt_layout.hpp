// How a row-major batched matmul is handed to cuBLASLt, which is column-major, which bias-gradient
// epilogue sums which operand, and the alignments its algorithms are chosen for. Plain integers, no
// CUDA headers: tests/cuda_cublaslt_test.cpp checks the mapping on the host against a column-major
// reference of cuBLASLt's definitions (the library itself runs in the GPU suite).
#pragma once

#include <cstdint>

namespace canopy::kernels::cuda::detail {

/// One matrix operand as cuBLASLt reads it: stored column-major `rows` x `cols` with leading
/// dimension `ld`, batch item b at b * batch_stride elements, and transposed by the op when
/// `transposed` (CUBLAS_OP_T).
struct LtMatrix {
  std::uint64_t rows = 0, cols = 0;
  std::int64_t ld = 0, batch_stride = 0;
  bool transposed = false;
};

/// cuBLASLt's D = op(A) @ op(B) for row-major C[b] = op(a[b]) @ op(b[b]) (C m x n; a stored m x k,
/// k x m when trans_a; b stored k x n, n x k when trans_b): the same bytes read column-major are
/// C^T = op(b)^T @ op(a)^T, so cuBLASLt's A is our b's buffer and its B our a's. D is n x m, so a
/// bias of n values (one per column of C) is one per row of D, as cuBLASLt's bias epilogue adds it.
struct LtMatmulLayout {
  LtMatrix a;  ///< our b's buffer
  LtMatrix b;  ///< our a's buffer
  LtMatrix d;  ///< C (and the C operand, with beta 0)
  std::int64_t batch = 1;
};

constexpr LtMatmulLayout lt_matmul_layout(std::int64_t batch, std::int64_t m, std::int64_t k, std::int64_t n,
                                          bool trans_a, bool trans_b) {
  using U = std::uint64_t;
  LtMatmulLayout l;
  // b stored k x n row-major is n x k column-major (ld n), used as it is; stored n x k it is k x n
  // (ld k), transposed by the op.
  l.a = trans_b ? LtMatrix{U(k), U(n), k, k * n, true} : LtMatrix{U(n), U(k), n, k * n, false};
  // a stored m x k row-major is k x m column-major (ld k); stored k x m it is m x k (ld m), transposed.
  l.b = trans_a ? LtMatrix{U(m), U(k), m, m * k, true} : LtMatrix{U(k), U(m), k, m * k, false};
  l.d = LtMatrix{U(n), U(m), n, m * n, false};
  l.batch = batch;
  return l;
}

/// The bias-gradient epilogue that sums one operand of that matmul over k: `a_of_lt` is
/// CUBLASLT_EPILOGUE_BGRADA (it sums op(A), n x k, over k: one value per row of D, so our b's
/// columns, n values), `b_of_lt` is BGRADB (it sums op(B), k x m, over k: one value per column of
/// D, so our a's columns, m values). cuBLASLt offers BGRADA only for an A it does not transpose and
/// BGRADB only for a B it does (b stored k x n, a stored k x m: the layouts whose leading axis is
/// the contracted one); `none` for the other layouts.
enum class LtBiasGrad { none, a_of_lt, b_of_lt };
constexpr LtBiasGrad lt_bias_grad(bool sum_b, bool trans_a, bool trans_b) {
  if (sum_b) return trans_b ? LtBiasGrad::none : LtBiasGrad::a_of_lt;
  return trans_a ? LtBiasGrad::b_of_lt : LtBiasGrad::none;
}

/// The largest power of two, up to 256, dividing the address: what cuBLASLt (and, capped at 16,
/// cuDNN) is told each operand's alignment is (cuBLASLt assumes 256, which an offset view may not
/// have).
inline std::uint32_t lt_alignment(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t a = 1;
  while (a < 256 && address % (2 * a) == 0) a *= 2;
  return a;
}

}  // namespace canopy::kernels::cuda::detail
