// What one element of each elementwise op is on the GPU: the same definitions as the CPU loops
// (kernels/cpu/loops/unary.cpp, binary.cpp, convert.cpp), written once as __host__ __device__
// functions so that the CUDA kernels use them and the CPU test suite checks them, compiled for the
// host, against the CPU kernels op by op and dtype by dtype (tests/cuda_test.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "canopy/dtype.hpp"
#include "canopy/kernels/erf_inv.hpp"  // the host side of erf_inv; devices use CUDA's erfinv
#include "canopy/kernels/ops.hpp"

#if defined(__CUDACC__)
#define CANOPY_HD __host__ __device__
#else
#define CANOPY_HD
#endif

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
// CUDA's (same names) on the device.
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

// ---- Unary ops: unary_<name>(x) for each op of CANOPY_UNARY_OPS, for compute type C (float or
// double; integers and bool only for the ops unary_defined admits). The math library's functions
// read their operand's bits, so they get it through denormal_as_zero.

template <class C>
CANOPY_HD inline C unary_neg(C x) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(wrapping_t<C>(0) - wrapping_t<C>(x));  // wraps
  else return -x;
}
template <class C>
CANOPY_HD inline C unary_abs(C x) {
  if constexpr (std::is_integral_v<C>) return std::is_signed_v<C> && x < 0 ? unary_neg(x) : x;
  else return m_fabs(x);
}
template <class C>
CANOPY_HD inline C unary_sign(C x) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>((x > 0) - (x < 0));
  else return x > 0 ? C(1) : (x < 0 ? C(-1) : x);
}
/// bool: not; integers: bitwise not; floats: bools as 0/1 (a fused program's registers).
template <class C>
CANOPY_HD inline C unary_logical_not(C x) {
  if constexpr (std::is_same_v<C, bool>) return !x;
  else if constexpr (std::is_integral_v<C>) return static_cast<C>(~x);
  else return x != C(0) ? C(0) : C(1);
}
template <class C> CANOPY_HD inline C unary_exp(C x) { return m_exp(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_log(C x) { return m_log(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_log1p(C x) { return m_log1p(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_expm1(C x) { return m_expm1(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_sqrt(C x) { return m_sqrt(x); }
template <class C> CANOPY_HD inline C unary_rsqrt(C x) { return C(1) / m_sqrt(x); }
template <class C> CANOPY_HD inline C unary_tanh(C x) { return m_tanh(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_logistic(C x) { return C(1) / (C(1) + m_exp(-denormal_as_zero(x))); }
template <class C> CANOPY_HD inline C unary_sin(C x) { return m_sin(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_cos(C x) { return m_cos(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_tan(C x) { return m_tan(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_floor(C x) { return m_floor(x); }
template <class C> CANOPY_HD inline C unary_ceil(C x) { return m_ceil(x); }
template <class C> CANOPY_HD inline C unary_round_even(C x) { return m_nearbyint(x); }
template <class C> CANOPY_HD inline C unary_round_away(C x) { return m_round(x); }
/// 1 or 0 (the kernels store it as bool).
template <class C> CANOPY_HD inline C unary_is_finite(C x) { return is_finite(x) ? C(1) : C(0); }
template <class C> CANOPY_HD inline C unary_erf(C x) { return m_erf(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_exp2(C x) { return m_exp2(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_erf_inv(C x) { return m_erf_inv(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_asin(C x) { return m_asin(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_acos(C x) { return m_acos(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_atan(C x) { return m_atan(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_asinh(C x) { return m_asinh(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_acosh(C x) { return m_acosh(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_atanh(C x) { return m_atanh(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_sinh(C x) { return m_sinh(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_cosh(C x) { return m_cosh(denormal_as_zero(x)); }
template <class C> CANOPY_HD inline C unary_cbrt(C x) { return m_cbrt(denormal_as_zero(x)); }

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

// ---- Binary ops: binary_<name>(x, y) for each op of CANOPY_BINARY_OPS (comparisons give bool).

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
CANOPY_HD inline C binary_add(C x, C y) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(wrapping_t<C>(x) + wrapping_t<C>(y));
  else return x + y;
}
template <class C>
CANOPY_HD inline C binary_sub(C x, C y) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(wrapping_t<C>(x) - wrapping_t<C>(y));
  else return x - y;
}
template <class C>
CANOPY_HD inline C binary_mul(C x, C y) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(wrapping_t<C>(x) * wrapping_t<C>(y));
  else return x * y;
}
template <class C>
CANOPY_HD inline C binary_div(C x, C y) {
  if constexpr (std::is_integral_v<C>) return int_div(x, y);
  else return x / y;
}
template <class C>
CANOPY_HD inline C binary_rem(C x, C y) {
  if constexpr (std::is_integral_v<C>) return int_rem(x, y);
  else return m_fmod(denormal_as_zero(x), denormal_as_zero(y));
}
template <class C>
CANOPY_HD inline C binary_pow(C x, C y) {
  if constexpr (std::is_integral_v<C>) return int_pow(x, y);
  else return m_pow(denormal_as_zero(x), denormal_as_zero(y));
}
template <class C> CANOPY_HD inline C binary_atan2(C x, C y) { return m_atan2(denormal_as_zero(x), denormal_as_zero(y)); }
/// bool: or / and; floats: NaN-propagating, like lax.max / lax.min.
template <class C>
CANOPY_HD inline C binary_max(C x, C y) {
  if constexpr (std::is_same_v<C, bool>) return x || y;
  else if constexpr (std::is_integral_v<C>) return x > y ? x : y;
  else return x != x ? x : (y != y ? y : (x > y ? x : y));
}
template <class C>
CANOPY_HD inline C binary_min(C x, C y) {
  if constexpr (std::is_same_v<C, bool>) return x && y;
  else if constexpr (std::is_integral_v<C>) return x < y ? x : y;
  else return x != x ? x : (y != y ? y : (x < y ? x : y));
}
template <class C> CANOPY_HD inline bool binary_eq(C x, C y) { return x == y; }
template <class C> CANOPY_HD inline bool binary_ne(C x, C y) { return x != y; }
template <class C> CANOPY_HD inline bool binary_lt(C x, C y) { return x < y; }
template <class C> CANOPY_HD inline bool binary_le(C x, C y) { return x <= y; }
template <class C> CANOPY_HD inline bool binary_gt(C x, C y) { return x > y; }
template <class C> CANOPY_HD inline bool binary_ge(C x, C y) { return x >= y; }
// The logical ops: bool's; bitwise on integers; on floats, bools as 0/1 (a fused program's
// registers): and is the product, or the maximum, xor the difference.
template <class C>
CANOPY_HD inline C binary_logical_and(C x, C y) {
  if constexpr (std::is_same_v<C, bool>) return x && y;
  else if constexpr (std::is_integral_v<C>) return static_cast<C>(x & y);
  else return x * y;
}
template <class C>
CANOPY_HD inline C binary_logical_or(C x, C y) {
  if constexpr (std::is_same_v<C, bool>) return x || y;
  else if constexpr (std::is_integral_v<C>) return static_cast<C>(x | y);
  else return x > y ? x : y;
}
template <class C>
CANOPY_HD inline C binary_logical_xor(C x, C y) {
  if constexpr (std::is_same_v<C, bool>) return x != y;
  else if constexpr (std::is_integral_v<C>) return static_cast<C>(x ^ y);
  else return x != y ? C(1) : C(0);
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
