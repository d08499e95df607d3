// How a row-major batched matmul is handed to cuBLASLt, which is column-major, and the alignments
// its algorithms are chosen for. Plain integers, no CUDA headers: tests/cuda_backend_test.cpp
// checks the mapping on the host against a column-major reference.
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
