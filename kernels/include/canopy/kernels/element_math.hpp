// What one element of each elementwise op is, on every backend: the ops' math, written in the op
// lists themselves (ops.hpp's CANOPY_UNARY_OPS and CANOPY_BINARY_OPS), made into __host__
// __device__ functions here (math::unary_<name>, math::binary_<name>) with the helpers that math
// calls, and the switches over the ops. The CPU loops (kernels/cpu/loops/unary.cpp, binary.cpp,
// fused.cpp), the CUDA kernels and the code generators' kernels all run these; the CPU test
// suite checks them, compiled for the host, against the CPU kernels op by op and dtype by dtype
// (tests/cuda_test.cpp, tests/elementwise_ops_test.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "canopy/dtype.hpp"
#include "canopy/kernels/erf_inv.hpp"  // the host side of erf_inv; devices use CUDA's erfinv
#include "canopy/kernels/hd.hpp"
#include "canopy/kernels/ops.hpp"

namespace canopy::kernels::math {

/// Arithmetic happens in float for the 16-bit floats, in the storage type otherwise.
template <class T>
CANOPY_HD constexpr compute_type_t<T> load(T v) {
  if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) return static_cast<float>(v);
  else return v;
}
template <class T, class C>
CANOPY_HD constexpr T store(C v) {
  return ::canopy::detail::store_as<T>(v);
}

// The C math library under one name per function for float and double: glibc's on the host,
// CUDA's (same names) on the device. An op's math in the lists calls these (m_exp(x)).
#define CANOPY_MATH1(name)                                        \
  template <class C>                                              \
  CANOPY_HD inline C m_##name(C x) {                              \
    if constexpr (std::is_same_v<C, float>) return ::name##f(x);  \
    else return ::name(x);                                        \
  }
CANOPY_MATH1(exp) CANOPY_MATH1(log) CANOPY_MATH1(log1p) CANOPY_MATH1(expm1) CANOPY_MATH1(sqrt)
CANOPY_MATH1(tanh) CANOPY_MATH1(sin) CANOPY_MATH1(cos) CANOPY_MATH1(tan) CANOPY_MATH1(floor)
CANOPY_MATH1(ceil) CANOPY_MATH1(nearbyint) CANOPY_MATH1(round) CANOPY_MATH1(erf) CANOPY_MATH1(exp2)
CANOPY_MATH1(fabs) CANOPY_MATH1(asin) CANOPY_MATH1(acos) CANOPY_MATH1(atan) CANOPY_MATH1(asinh)
CANOPY_MATH1(acosh) CANOPY_MATH1(atanh) CANOPY_MATH1(sinh) CANOPY_MATH1(cosh) CANOPY_MATH1(cbrt)
CANOPY_MATH1(log2) CANOPY_MATH1(log10) CANOPY_MATH1(trunc) CANOPY_MATH1(rint) CANOPY_MATH1(erfc)
CANOPY_MATH1(lgamma) CANOPY_MATH1(tgamma)
#undef CANOPY_MATH1
#define CANOPY_MATH2(name)                                          \
  template <class C>                                                \
  CANOPY_HD inline C m_##name(C x, C y) {                           \
    if constexpr (std::is_same_v<C, float>) return ::name##f(x, y); \
    else return ::name(x, y);                                       \
  }
CANOPY_MATH2(fmod) CANOPY_MATH2(pow) CANOPY_MATH2(atan2)
#undef CANOPY_MATH2

template <class C>
CANOPY_HD inline C m_erf_inv(C x) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<C, float>) return ::erfinvf(x);
  else return ::erfinv(x);
#else
  if constexpr (std::is_same_v<C, float>) return erf_inv_f32(x);
  else return erf_inv_f64(x);
#endif
}

/// x, or a zero of x's sign where the FPU reads x as zero: a denormal while canopy's kernels flush
/// denormals (DAZ, as XLA on CPU). The transcendental functions take x's bits apart (the exponent
/// extraction of log, pow, cbrt and fmod) or return a tiny x unchanged (sin, tanh, ...), so
/// without this they would see the denormal that arithmetic reads as zero. The comparison itself
/// honours DAZ: without it (flushing off, or on a GPU) this is x.
template <class C>
CANOPY_HD inline C denormal_as_zero(C x) {
  return x == C(0) ? x * C(0) : x;
}

template <class C>
CANOPY_HD constexpr bool is_finite(C x) {
  return x - x == x - x;  // inf - inf and NaN - NaN are NaN; finite - finite is 0
}

// ---- The helpers the unary ops' math (CANOPY_UNARY_OPS) calls, for compute type C (float or
// double; integers and bool where the op has them). The math library's functions read their
// operand's bits, so the lists hand them it through denormal_as_zero.

/// -x; integers wrap (the lowest value is its own negation).
template <class C>
CANOPY_HD inline C wrapping_neg(C x) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(wrapping_t<C>(0) - wrapping_t<C>(x));
  else return -x;
}
/// |x| (integers: the lowest value is its own magnitude, as it wraps).
template <class C>
CANOPY_HD inline C absolute(C x) {
  if constexpr (std::is_integral_v<C>) return std::is_signed_v<C> && x < 0 ? wrapping_neg(x) : x;
  else return m_fabs(x);
}
/// -1, 0 or 1 (floats: zeros and NaN give themselves).
template <class C>
CANOPY_HD inline C signum(C x) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>((x > 0) - (x < 0));
  else return x > 0 ? C(1) : (x < 0 ? C(-1) : x);
}
/// bool: not; integers: bitwise not; floats: bools as 0/1 (a fused program's registers).
template <class C>
CANOPY_HD inline C logical_not(C x) {
  if constexpr (std::is_same_v<C, bool>) return !x;
  else if constexpr (std::is_integral_v<C>) return static_cast<C>(~x);
  else return x != C(0) ? C(0) : C(1);
}

// ---- The helpers the binary ops' math (CANOPY_BINARY_OPS) calls.

/// Integer power by squaring; negative exponents give 0 except for bases 1 and -1.
template <class C>
CANOPY_HD constexpr C int_pow(C base, C e) {
  if constexpr (std::is_signed_v<C>) {
    if (e < 0) return base == 1 ? C(1) : (base == -1 ? ((e & 1) ? C(-1) : C(1)) : C(0));
  }
  using U = wrapping_t<C>;
  U r = 1, b = static_cast<U>(base);
  for (auto k = static_cast<U>(e); k; k >>= 1, b *= b)
    if (k & 1) r *= b;
  return static_cast<C>(r);
}

/// Integer division and remainder as XLA defines them where C's are undefined: x / 0 is -1 (all
/// bits set, so the largest value of an unsigned type) and x % 0 is x; the lowest signed value
/// divided by -1 is itself, with remainder 0.
template <class C>
CANOPY_HD constexpr C int_div(C x, C y) {
  if (y == 0) return static_cast<C>(~C(0));
  if constexpr (std::is_signed_v<C>) {
    using U = wrapping_t<C>;
    if (y == -1) return static_cast<C>(U(0) - U(x));  // wraps at the lowest value
  }
  return static_cast<C>(x / y);
}
template <class C>
CANOPY_HD constexpr C int_rem(C x, C y) {
  if (y == 0) return x;
  if constexpr (std::is_signed_v<C>) {
    if (y == -1) return C(0);
  }
  return static_cast<C>(x % y);
}

// Integer arithmetic wraps, in unsigned arithmetic (no signed-overflow UB); division by 0 as XLA's.
template <class C>
CANOPY_HD inline C wrapping_add(C x, C y) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(wrapping_t<C>(x) + wrapping_t<C>(y));
  else return x + y;
}
template <class C>
CANOPY_HD inline C wrapping_sub(C x, C y) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(wrapping_t<C>(x) - wrapping_t<C>(y));
  else return x - y;
}
template <class C>
CANOPY_HD inline C wrapping_mul(C x, C y) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(wrapping_t<C>(x) * wrapping_t<C>(y));
  else return x * y;
}
template <class C>
CANOPY_HD inline C quotient(C x, C y) {
  if constexpr (std::is_integral_v<C>) return int_div(x, y);
  else return x / y;
}
/// lax.rem: the remainder with x's sign (C's %, fmod for floats).
template <class C>
CANOPY_HD inline C remainder_of(C x, C y) {
  if constexpr (std::is_integral_v<C>) return int_rem(x, y);
  else return m_fmod(denormal_as_zero(x), denormal_as_zero(y));
}
template <class C>
CANOPY_HD inline C power(C x, C y) {
  if constexpr (std::is_integral_v<C>) return int_pow(x, y);
  else return m_pow(denormal_as_zero(x), denormal_as_zero(y));
}
/// bool: or / and; floats: NaN-propagating, like lax.max / lax.min.
template <class C>
CANOPY_HD inline C nan_max(C x, C y) {
  if constexpr (std::is_same_v<C, bool>) return x || y;
  else if constexpr (std::is_integral_v<C>) return x > y ? x : y;
  else return x != x ? x : (y != y ? y : (x > y ? x : y));
}
template <class C>
CANOPY_HD inline C nan_min(C x, C y) {
  if constexpr (std::is_same_v<C, bool>) return x && y;
  else if constexpr (std::is_integral_v<C>) return x < y ? x : y;
  else return x != x ? x : (y != y ? y : (x < y ? x : y));
}
// The logical ops: bool's; bitwise on integers; on floats, bools as 0/1 (a fused program's
// registers): and is the product, or the maximum, xor the difference.
template <class C>
CANOPY_HD inline C logical_and(C x, C y) {
  if constexpr (std::is_same_v<C, bool>) return x && y;
  else if constexpr (std::is_integral_v<C>) return static_cast<C>(x & y);
  else return x * y;
}
template <class C>
CANOPY_HD inline C logical_or(C x, C y) {
  if constexpr (std::is_same_v<C, bool>) return x || y;
  else if constexpr (std::is_integral_v<C>) return static_cast<C>(x | y);
  else return x > y ? x : y;
}
template <class C>
CANOPY_HD inline C logical_xor(C x, C y) {
  if constexpr (std::is_same_v<C, bool>) return x != y;
  else if constexpr (std::is_integral_v<C>) return static_cast<C>(x ^ y);
  else return x != y ? C(1) : C(0);
}

// ---- The ops: unary_<name>(x) and binary_<name>(x, y), each its entry's math in ops.hpp's lists.
#define CANOPY_UNARY_MATH(name, integers, math) \
  template <class C>                            \
  CANOPY_HD inline C unary_##name(C x) {        \
    return math;                                \
  }
CANOPY_UNARY_OPS(CANOPY_UNARY_MATH)
#undef CANOPY_UNARY_MATH
// Comparisons give bool, the rest C.
#define CANOPY_BINARY_MATH(name, kind, math)  \
  template <class C>                          \
  CANOPY_HD inline auto binary_##name(C x, C y) { \
    return math;                              \
  }
CANOPY_BINARY_OPS(CANOPY_BINARY_MATH)
#undef CANOPY_BINARY_MATH

/// Whether unary `op` is defined for compute type C (the primitives' abstract_eval admits no other).
template <class C>
CANOPY_HD constexpr bool unary_defined(UnaryOp op) {
  if constexpr (std::is_same_v<C, bool>) return op == UnaryOp::logical_not;
  else if constexpr (std::is_integral_v<C>) return on_integers(op);
  else return op != UnaryOp::logical_not;
}

/// op(x) for compute type C (is_finite gives 1 or 0; the kernels store it as bool).
template <class C>
CANOPY_HD inline C unary(UnaryOp op, C x) {
  switch (op) {
#define CANOPY_UNARY_CASE(name, ...)                                  \
  case UnaryOp::name:                                                 \
    if constexpr (unary_defined<C>(UnaryOp::name)) return unary_##name(x); \
    else break;
    CANOPY_UNARY_OPS(CANOPY_UNARY_CASE)
#undef CANOPY_UNARY_CASE
  }
  return x;  // not defined for C: abstract_eval admits no such call
}

/// op(x) of a fused program's register (f32, bools as 0/1): every op, logical_not included.
CANOPY_HD inline float fused_unary(UnaryOp op, float x) {
  switch (op) {
#define CANOPY_FUSED_UNARY_CASE(name, ...) \
  case UnaryOp::name: return unary_##name(x);
    CANOPY_UNARY_OPS(CANOPY_FUSED_UNARY_CASE)
#undef CANOPY_FUSED_UNARY_CASE
  }
  return x;
}

using ::canopy::kernels::is_comparison;

/// Whether binary `op` is defined for compute type C (the primitives admit no other).
template <class C>
CANOPY_HD constexpr bool binary_defined(BinaryOp op) {
  const BinaryKind kind = binary_kind(op);
  if constexpr (std::is_same_v<C, bool>)
    return kind == BinaryKind::comparison || kind == BinaryKind::logical || op == BinaryOp::max || op == BinaryOp::min;
  else if constexpr (std::is_integral_v<C>) return kind != BinaryKind::float_only;
  else return kind != BinaryKind::logical;
}

/// op(x, y) for compute type C (comparisons give 1 or 0; compare() gives them as bool).
template <class C>
CANOPY_HD inline C binary(BinaryOp op, C x, C y) {
  switch (op) {
#define CANOPY_BINARY_CASE(name, ...)                                                    \
  case BinaryOp::name:                                                                   \
    if constexpr (binary_defined<C>(BinaryOp::name)) return static_cast<C>(binary_##name(x, y)); \
    else break;
    CANOPY_BINARY_OPS(CANOPY_BINARY_CASE)
#undef CANOPY_BINARY_CASE
  }
  return x;  // not defined for C: abstract_eval admits no such call
}

/// Comparison `op` of x and y.
template <class C>
CANOPY_HD inline bool compare(BinaryOp op, C x, C y) {
  switch (op) {
#define CANOPY_COMPARE_CASE(name, ...)                                \
  case BinaryOp::name:                                                \
    if constexpr (binary_kind(BinaryOp::name) == BinaryKind::comparison) return binary_##name(x, y); \
    else break;
    CANOPY_BINARY_OPS(CANOPY_COMPARE_CASE)
#undef CANOPY_COMPARE_CASE
  }
  return false;  // not a comparison
}

/// op(a, b) of a fused program's registers (f32, bools as 0/1; comparisons give 0/1).
CANOPY_HD inline float fused_binary(BinaryOp op, float a, float b) {
  switch (op) {
#define CANOPY_FUSED_BINARY_CASE(name, ...) \
  case BinaryOp::name: return static_cast<float>(binary_##name(a, b));
    CANOPY_BINARY_OPS(CANOPY_FUSED_BINARY_CASE)
#undef CANOPY_FUSED_BINARY_CASE
  }
  return a;
}

/// The integer shifts as XLA defines them (shift amounts are unsigned: a negative or too large
/// one shifts everything out; arithmetic right shifts fill with the top bit, whatever the
/// signedness), and nextafter. The CPU primitives use these definitions too.
template <class T>
CANOPY_HD constexpr T shift_left(T x, T amount) {
  using U = std::make_unsigned_t<T>;
  constexpr U bits = sizeof(T) * 8;
  const U s = static_cast<U>(amount);
  return static_cast<T>(s >= bits ? U(0) : static_cast<U>(U(x) << s));
}
template <class T>
CANOPY_HD constexpr T shift_right_logical(T x, T amount) {
  using U = std::make_unsigned_t<T>;
  constexpr U bits = sizeof(T) * 8;
  const U s = static_cast<U>(amount);
  return static_cast<T>(s >= bits ? U(0) : static_cast<U>(U(x) >> s));
}
template <class T>
CANOPY_HD constexpr T shift_right_arithmetic(T x, T amount) {
  using U = std::make_unsigned_t<T>;
  constexpr U bits = sizeof(T) * 8;
  const U s = static_cast<U>(amount);
  const U fill = (U(x) >> (bits - 1)) ? U(~U(0)) : U(0);
  if (s >= bits) return static_cast<T>(fill);
  return static_cast<T>(s == 0 ? U(x) : static_cast<U>((U(x) >> s) | U(fill << (bits - s))));
}
template <class C>
CANOPY_HD inline C next_after(C x, C y) {
  if constexpr (std::is_same_v<C, float>) return ::nextafterf(x, y);
  else return ::nextafter(x, y);
}

/// convert_element_type of one value: float -> integer truncates toward zero and saturates,
/// NaN -> 0; -> bool is `!= 0`; everything else is the C++ conversion.
template <class From, class To>
CANOPY_HD inline To convert(From v) {
  using CF = compute_type_t<From>;
  using CT = compute_type_t<To>;  // the integer itself, for integer To
  const CF x = load(v);
  if constexpr (std::is_same_v<To, bool>) {
    return x != CF(0);
  } else if constexpr (std::is_floating_point_v<CF> && std::is_integral_v<CT>) {
    if (x != x) return To(0);
    if (x <= static_cast<CF>(std::numeric_limits<CT>::lowest())) return std::numeric_limits<CT>::lowest();
    if (x >= static_cast<CF>(std::numeric_limits<CT>::max())) return std::numeric_limits<CT>::max();
    return static_cast<To>(x);
  } else {
    return store<To>(x);
  }
}

}  // namespace canopy::kernels::math
