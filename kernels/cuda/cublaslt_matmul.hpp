// Internal to kernels/cuda: the plain product on cuBLASLt (cublaslt_matmul.cpp), matmul's first
// choice for f32, bf16 and f16: its algorithm is timed among the heuristic's at the first call of
// each shape (set_cublaslt_autotune), where cuBLAS's own entry points take the heuristic's first.
#pragma once

#include <cstdint>

#include "canopy/dtype.hpp"
#include "canopy/precision.hpp"

namespace canopy::kernels::cuda::detail {

/// matmul's product (row-major C = op(A) @ op(B), `batch` of them) as one cuBLASLt matmul; false,
/// having run nothing, where cuBLASLt has no algorithm for it, refuses it, or the dtype is not
/// f32, bf16 or f16 (or k = 0).
bool matmul_lt(DType dtype, const void* a, const void* b, void* c, std::int64_t batch, std::int64_t m, std::int64_t k,
               std::int64_t n, bool trans_a, bool trans_b, int device, Precision precision);

}  // namespace canopy::kernels::cuda::detail
