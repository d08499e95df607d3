// The operations every backend's kernels implement, named once for all of them: the elementwise ops
// as one list each (CANOPY_UNARY_OPS, CANOPY_BINARY_OPS), whose entries carry each op's math, plus
// the reductions and scatter's combining ops. The lists generate the enums here, the element math
// (element_math.hpp's math::unary_<name> / binary_<name>, which the CPU loops, the fused kernels
// and the CUDA kernels run, and which the code generators' kernels call) and every switch over the
// ops. Adding an elementwise op here is one line in its list: its name, its dtypes and its math.
#pragma once

#include <cstdint>
#include <string_view>

namespace canopy::kernels {

// X(name, integers, math): every elementwise one-input op, in enum order. `integers`: whether
// integer dtypes have it (bool has logical_not only; float dtypes all but logical_not).
// `math`: one element, an expression of x of compute type C (float or double; an integer or
// bool where the op has them), which element_math.hpp makes math::unary_<name>; the functions it
// calls are defined there (m_<f>: the C math library's f for float and double). Here only the
// names count: an includer that wants the enum compiles none of the math. is_finite writes bool
// (its math gives 1 or 0), the rest keep the dtype.
#define CANOPY_UNARY_OPS(X)                                         \
  X(neg,         true,  wrapping_neg(x))                            \
  X(abs,         true,  absolute(x))                                \
  X(sign,        true,  signum(x))                                  \
  X(exp,         false, m_exp(denormal_as_zero(x)))                 \
  X(log,         false, m_log(denormal_as_zero(x)))                 \
  X(log1p,       false, m_log1p(denormal_as_zero(x)))               \
  X(expm1,       false, m_expm1(denormal_as_zero(x)))               \
  X(sqrt,        false, m_sqrt(x))                                  \
  X(rsqrt,       false, C(1) / m_sqrt(x))                           \
  X(tanh,        false, m_tanh(denormal_as_zero(x)))                \
  X(logistic,    false, C(1) / (C(1) + m_exp(-denormal_as_zero(x)))) \
  X(sin,         false, m_sin(denormal_as_zero(x)))                 \
  X(cos,         false, m_cos(denormal_as_zero(x)))                 \
  X(floor,       false, m_floor(x))                                 \
  X(ceil,        false, m_ceil(x))                                  \
  X(round_even,  false, m_nearbyint(x))                             \
  X(round_away,  false, m_round(x))                                 \
  X(is_finite,   false, is_finite(x) ? C(1) : C(0))                 \
  X(erf,         false, m_erf(denormal_as_zero(x)))                 \
  X(logical_not, true,  logical_not(x))                             \
  X(tan,         false, m_tan(denormal_as_zero(x)))                 \
  X(exp2,        false, m_exp2(denormal_as_zero(x)))                \
  X(erf_inv,     false, m_erf_inv(denormal_as_zero(x)))             \
  X(asin,        false, m_asin(denormal_as_zero(x)))                \
  X(acos,        false, m_acos(denormal_as_zero(x)))                \
  X(atan,        false, m_atan(denormal_as_zero(x)))                \
  X(asinh,       false, m_asinh(denormal_as_zero(x)))               \
  X(acosh,       false, m_acosh(denormal_as_zero(x)))               \
  X(atanh,       false, m_atanh(denormal_as_zero(x)))               \
  X(sinh,        false, m_sinh(denormal_as_zero(x)))                \
  X(cosh,        false, m_cosh(denormal_as_zero(x)))                \
  X(cbrt,        false, m_cbrt(denormal_as_zero(x)))

// X(name, kind, math): every elementwise two-input op, in enum order. `kind`: arithmetic (every
// dtype but bool; bool has max and min), float_only, comparison (writes bool) or logical (bool
// and integers, bitwise on integers). `math`: one element, an expression of x and y of compute
// type C, as in CANOPY_UNARY_OPS (math::binary_<name>; comparisons give bool).
#define CANOPY_BINARY_OPS(X)                                                            \
  X(add,         arithmetic, wrapping_add(x, y))                                        \
  X(sub,         arithmetic, wrapping_sub(x, y))                                        \
  X(mul,         arithmetic, wrapping_mul(x, y))                                        \
  X(div,         arithmetic, quotient(x, y))                                            \
  X(pow,         arithmetic, power(x, y))                                               \
  X(max,         arithmetic, nan_max(x, y))                                             \
  X(min,         arithmetic, nan_min(x, y))                                             \
  X(atan2,       float_only, m_atan2(denormal_as_zero(x), denormal_as_zero(y)))         \
  X(rem,         arithmetic, remainder_of(x, y))                                        \
  X(eq,          comparison, x == y)                                                    \
  X(ne,          comparison, x != y)                                                    \
  X(lt,          comparison, x < y)                                                     \
  X(le,          comparison, x <= y)                                                    \
  X(gt,          comparison, x > y)                                                     \
  X(ge,          comparison, x >= y)                                                    \
  X(logical_and, logical,    logical_and(x, y))                                         \
  X(logical_or,  logical,    logical_or(x, y))                                          \
  X(logical_xor, logical,    logical_xor(x, y))

/// Elementwise one-input operations (is_finite writes bool; the rest keep the dtype).
enum class UnaryOp : std::uint8_t {
#define CANOPY_ENUMERATOR(name, ...) name,
  CANOPY_UNARY_OPS(CANOPY_ENUMERATOR)
};
/// Elementwise two-input operations (comparisons write bool).
enum class BinaryOp : std::uint8_t { CANOPY_BINARY_OPS(CANOPY_ENUMERATOR) };
#undef CANOPY_ENUMERATOR

#define CANOPY_COUNT(...) +1
/// How many ops each list has (the enumerators are 0..count-1).
inline constexpr int kUnaryOpCount = 0 CANOPY_UNARY_OPS(CANOPY_COUNT);
inline constexpr int kBinaryOpCount = 0 CANOPY_BINARY_OPS(CANOPY_COUNT);
#undef CANOPY_COUNT
/// The last UnaryOp (the ops are numbered 0..kLastUnaryOp).
inline constexpr UnaryOp kLastUnaryOp = static_cast<UnaryOp>(kUnaryOpCount - 1);
/// The last BinaryOp (the ops are numbered 0..kLastBinaryOp).
inline constexpr BinaryOp kLastBinaryOp = static_cast<BinaryOp>(kBinaryOpCount - 1);

/// The op's name as the list spells it ("logical_not").
constexpr std::string_view op_name(UnaryOp op) {
  switch (op) {
#define CANOPY_NAME_CASE(name, ...) \
  case UnaryOp::name: return #name;
    CANOPY_UNARY_OPS(CANOPY_NAME_CASE)
#undef CANOPY_NAME_CASE
  }
  return "";
}
constexpr std::string_view op_name(BinaryOp op) {
  switch (op) {
#define CANOPY_BINARY_NAME_CASE(name, ...) \
  case BinaryOp::name: return #name;
    CANOPY_BINARY_OPS(CANOPY_BINARY_NAME_CASE)
#undef CANOPY_BINARY_NAME_CASE
  }
  return "";
}

/// Whether integer dtypes have unary `op`.
constexpr bool on_integers(UnaryOp op) {
  switch (op) {
#define CANOPY_ON_INTEGERS_CASE(name, integers, ...) \
  case UnaryOp::name: return integers;
    CANOPY_UNARY_OPS(CANOPY_ON_INTEGERS_CASE)
#undef CANOPY_ON_INTEGERS_CASE
  }
  return false;
}

/// What a binary op is: how it treats dtypes and what it writes (CANOPY_BINARY_OPS' `kind`).
enum class BinaryKind : std::uint8_t { arithmetic, float_only, comparison, logical };
constexpr BinaryKind binary_kind(BinaryOp op) {
  switch (op) {
#define CANOPY_KIND_CASE(name, kind, ...) \
  case BinaryOp::name: return BinaryKind::kind;
    CANOPY_BINARY_OPS(CANOPY_KIND_CASE)
#undef CANOPY_KIND_CASE
  }
  return BinaryKind::arithmetic;
}
/// Comparisons write bool.
constexpr bool is_comparison(BinaryOp op) { return binary_kind(op) == BinaryKind::comparison; }

/// Reductions.
enum class ReduceOp : std::uint8_t { sum, max, min };
/// Cumulative reductions along one axis (lax.cumsum, cumprod, cummax, cummin).
enum class CumulativeOp : std::uint8_t { sum, prod, max, min };
/// How scatter combines an update with the operand element it lands on.
enum class ScatterOp : std::uint8_t { set, add };

}  // namespace canopy::kernels
