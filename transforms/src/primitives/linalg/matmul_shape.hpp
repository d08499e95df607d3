// dot_general's params, and dot_general seen as one batched matmul over its operands' own bytes:
// what its kernels run and what jit's epilogue fusion builds on.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "canopy/ops.hpp"
#include "canopy/shape.hpp"

namespace canopy::detail {

/// dot_general's params, as lax's: the dimension numbers and the operands' precisions.
struct DotGeneralParams {
  DotDimensionNumbers dimension_numbers;
  OperandPrecision precision;
};

/// dot_general at exactly `precision`, not the default's canonical form: what the rules and the
/// passes that rewrite a dot_general apply (the products they derive keep its precision, as JAX's).
Array dot_general_at(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims, const OperandPrecision& precision);

/// C[b] = A[b] @ B[b] for b < batch, C m x n; A stored m x k (k x m when trans_a), B k x n (n x k
/// when trans_b), all row-major.
struct MatmulShape {
  std::int64_t batch = 1, m = 1, k = 1, n = 1;
  bool trans_a = false, trans_b = false;
};

/// The matmul dot_general(lhs, rhs, dims) is when both operands can be read where they are (their
/// axes in (batch, free, contracting) order for lhs and (batch, contracting, free) for rhs, or with
/// free and contracting swapped), else nullopt: the kernel then permutes a copy first.
std::optional<MatmulShape> matmul_in_place(const Shape& lhs, const Shape& rhs, const DotDimensionNumbers& dims);
/// batch, m, k, n of dot_general(lhs, rhs, dims), whatever the operands' layouts.
MatmulShape matmul_dims(const Shape& lhs, const Shape& rhs, const DotDimensionNumbers& dims);
/// The axes of an operand in (batch, free, contracting) order when `contract_last`, else in
/// (batch, contracting, free) order: the permutation that makes a copy of it a plain matmul operand.
std::vector<int> matmul_layout(std::size_t rank, const std::vector<int>& batch, const std::vector<int>& contracting,
                               bool contract_last);

}  // namespace canopy::detail
