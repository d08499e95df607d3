// The CPU kernel families the primitives lower to, over the ops of canopy/kernels/ops.hpp. Raw
// pointers and shapes only: the Array layer validates shapes and dtypes before calling. oneDNN
// or loops are chosen inside.
#pragma once

#include <cstdint>
#include <span>

#include "canopy/dtype.hpp"
#include "canopy/kernels/ops.hpp"
#include "canopy/shape.hpp"

namespace canopy::kernels::cpu {

/// out[i] = op(in[i]) for n contiguous elements.
void unary(UnaryOp op, DType dtype, const void* in, void* out, std::int64_t n);

/// out = op(a, b) with numpy broadcasting; shapes already agree (ranks may differ).
void binary(BinaryOp op, DType dtype, const void* a, const Shape& a_shape, const void* b, const Shape& b_shape,
            void* out, const Shape& out_shape);

/// Converts n elements (float->int truncates toward zero and saturates, NaN -> 0).
void convert(DType from, DType to, const void* in, void* out, std::int64_t n);

/// out (contiguous, out_shape) = in read with element strides in_strides (0 = broadcast).
void strided_copy(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides,
                  const Shape& out_shape, void* out);

/// out[i] = cases[which[i]][i]; `which` is bool or i32, all of n elements.
void select_n(DType which_dtype, const void* which, std::span<const void* const> cases, std::size_t itemsize,
              void* out, std::int64_t n);

/// C[b] = A[b] @ B[b], row-major, A: batch x m x k, B: batch x k x n. f32 via oneDNN.
void matmul(DType dtype, const void* a, const void* b, void* c, std::int64_t batch, std::int64_t m, std::int64_t k,
            std::int64_t n);
/// f32 only: the same with A stored transposed (batch x k x m) and/or B (batch x n x k), read in
/// place by oneDNN.
void matmul_f32_transposed(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m,
                           std::int64_t k, std::int64_t n, bool trans_a, bool trans_b);

/// One step of a matmul's epilogue, applied in order to each f32 result while the matmul still
/// holds it (oneDNN post-ops): `v = op(v, operand)` for the binary ops, `v = op(v)` for the rest.
struct EpilogueStep {
  enum class Op : std::uint8_t { add, sub, mul, div, neg, tanh };
  /// How a binary step's operand is read: one value; a row of the n result columns, repeated
  /// over the rows and the batch; or a value per result element (batch x m x n).
  /// `destination`: a full operand that is the result's own buffer (a donated input jit writes
  /// the result into), added or subtracted as oneDNN's sum post-op, which reads it in place.
  enum class Operand : std::uint8_t { none, scalar, row, full, destination };
  Op op = Op::add;
  Operand operand = Operand::none;
};
/// At most this many steps per epilogue.
inline constexpr std::size_t kMaxEpilogueSteps = 8;
/// matmul_f32_transposed (k >= 1) with `epilogue` applied to every result; operands[i] is the
/// i-th binary step's operand. One oneDNN primitive with post-ops per shape and epilogue; where
/// oneDNN cannot build one, each step runs as its eager kernel over the result afterwards.
void matmul_f32_epilogue(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m,
                         std::int64_t k, std::int64_t n, bool trans_a, bool trans_b,
                         std::span<const EpilogueStep> epilogue, std::span<const float* const> operands);
/// Whether epilogues run as oneDNN post-ops (the default) or as passes over the result after a
/// plain matmul (the path taken where oneDNN builds no post-ops), for tests and comparisons.
void set_epilogue_post_ops(bool on);
bool epilogue_post_ops();

/// Reduces `in` (shape) over sorted unique `axes` into out (the kept dims, row-major).
void reduce(ReduceOp op, DType dtype, const void* in, const Shape& shape, std::span<const int> axes, void* out);

/// out[.., i, ..] = op of in[.., 0..i, ..] along `axis` (of in[.., i..n-1, ..] when `reverse`),
/// combined one element at a time from the start (the end), each partial result stored in the
/// dtype: integers wrap, float max/min propagate NaN as lax.max/min do.
void cumulative(CumulativeOp op, DType dtype, const void* in, void* out, const Shape& shape, int axis, bool reverse);

/// out = index along `dimension` of `shape`.
void iota(DType dtype, const Shape& shape, int dimension, void* out);

}  // namespace canopy::kernels::cpu
