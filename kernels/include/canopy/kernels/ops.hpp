// The operations every backend's kernels implement, named once for all of them: the elementwise
// ops as one list each (CANOPY_UNARY_OPS, CANOPY_BINARY_OPS) that generates their enums here and
// the switches over them (element_math.hpp's, which the CUDA kernels run, the CPU loops', the CPU
// fused kernel's), plus the reductions. Adding an elementwise op: one line in a list, its scalar
// math in element_math.hpp (unary_<name> / binary_<name>), and its spelling in the code
// generator's switch (cpu/codegen/fused_source.cpp; nullopt leaves it to the fused interpreter).
#pragma once

#include <cstdint>
#include <string_view>

namespace canopy::kernels {

// X(name, integers): every elementwise one-input op, in enum order; `integers` says whether
// integer dtypes have it (bool has logical_not only; float dtypes all but logical_not).
// is_finite writes bool, the rest keep the dtype.
#define CANOPY_UNARY_OPS(X)                                                                                    \
  X(neg, true) X(abs, true) X(sign, true) X(exp, false) X(log, false) X(log1p, false) X(expm1, false)          \
  X(sqrt, false) X(rsqrt, false) X(tanh, false) X(logistic, false) X(sin, false) X(cos, false) X(floor, false) \
  X(ceil, false) X(round_even, false) X(round_away, false) X(is_finite, false) X(erf, false)                    \
  X(logical_not, true) X(tan, false) X(exp2, false) X(erf_inv, false) X(asin, false) X(acos, false)            \
  X(atan, false) X(asinh, false) X(acosh, false) X(atanh, false) X(sinh, false) X(cosh, false) X(cbrt, false)

// X(name, kind): every elementwise two-input op, in enum order. `kind`: arithmetic (every dtype
// but bool; bool has max and min), float_only, comparison (writes bool) or logical (bool and
// integers, bitwise on integers).
#define CANOPY_BINARY_OPS(X)                                                                                       \
  X(add, arithmetic) X(sub, arithmetic) X(mul, arithmetic) X(div, arithmetic) X(pow, arithmetic) X(max, arithmetic) \
  X(min, arithmetic) X(atan2, float_only) X(rem, arithmetic) X(eq, comparison) X(ne, comparison) X(lt, comparison)  \
  X(le, comparison) X(gt, comparison) X(ge, comparison) X(logical_and, logical) X(logical_or, logical)               \
  X(logical_xor, logical)

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
#define CANOPY_ON_INTEGERS_CASE(name, integers) \
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
#define CANOPY_KIND_CASE(name, kind) \
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

}  // namespace canopy::kernels
