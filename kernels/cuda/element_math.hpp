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
#include "canopy/kernels/cpu.hpp"

#include "../cpu/loops/erf_inv.hpp"  // the host side of erf_inv; devices use CUDA's erfinv

#if defined(__CUDACC__)
#define CANOPY_HD __host__ __device__
#else
#define CANOPY_HD
#endif

namespace canopy::kernels::cuda::math {

using cpu::BinaryOp;
using cpu::UnaryOp;

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
  if constexpr (std::is_same_v<C, float>) return cpu::special::erf_inv_f32(x);
  else return cpu::special::erf_inv_f64(x);
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

/// Whether `op` is defined for compute type C (the primitives' abstract_eval admits no other).
template <class C>
CANOPY_HD constexpr bool unary_defined(UnaryOp op) {
  if constexpr (std::is_same_v<C, bool>) return op == UnaryOp::logical_not;
  else if constexpr (std::is_integral_v<C>)
    return op == UnaryOp::neg || op == UnaryOp::abs || op == UnaryOp::sign || op == UnaryOp::logical_not;
  else return op != UnaryOp::logical_not;
}

/// The float unary ops computed by a math library or a polynomial rather than by one instruction:
/// their operand goes through denormal_as_zero.
CANOPY_HD constexpr bool reads_denormals(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg: case UnaryOp::abs: case UnaryOp::sign: case UnaryOp::sqrt: case UnaryOp::rsqrt:
    case UnaryOp::floor: case UnaryOp::ceil: case UnaryOp::round_even: case UnaryOp::round_away:
    case UnaryOp::is_finite: case UnaryOp::logical_not:
      return false;
    default:
      return true;
  }
}

/// op(x) for compute type C (is_finite gives 1 or 0; the kernel stores it as bool).
template <class C>
CANOPY_HD inline C unary(UnaryOp op, C x) {
  if constexpr (std::is_same_v<C, bool>) {
    return !x;
  } else if constexpr (std::is_integral_v<C>) {
    using U = wrapping_t<C>;
    switch (op) {
      case UnaryOp::neg: return static_cast<C>(U(0) - U(x));
      case UnaryOp::abs: return std::is_signed_v<C> && x < 0 ? static_cast<C>(U(0) - U(x)) : x;
      case UnaryOp::sign: return static_cast<C>((x > 0) - (x < 0));
      default: return static_cast<C>(~x);  // logical_not on integers is bitwise
    }
  } else {
    if (reads_denormals(op)) x = denormal_as_zero(x);
    switch (op) {
      case UnaryOp::neg: return -x;
      case UnaryOp::abs: return m_fabs(x);
      case UnaryOp::sign: return x > 0 ? C(1) : (x < 0 ? C(-1) : x);
      case UnaryOp::exp: return m_exp(x);
      case UnaryOp::log: return m_log(x);
      case UnaryOp::log1p: return m_log1p(x);
      case UnaryOp::expm1: return m_expm1(x);
      case UnaryOp::sqrt: return m_sqrt(x);
      case UnaryOp::rsqrt: return C(1) / m_sqrt(x);
      case UnaryOp::tanh: return m_tanh(x);
      case UnaryOp::logistic: return C(1) / (C(1) + m_exp(-x));
      case UnaryOp::sin: return m_sin(x);
      case UnaryOp::cos: return m_cos(x);
      case UnaryOp::floor: return m_floor(x);
      case UnaryOp::ceil: return m_ceil(x);
      case UnaryOp::round_even: return m_nearbyint(x);
      case UnaryOp::round_away: return m_round(x);
      case UnaryOp::erf: return m_erf(x);
      case UnaryOp::tan: return m_tan(x);
      case UnaryOp::exp2: return m_exp2(x);
      case UnaryOp::erf_inv: return m_erf_inv(x);
      case UnaryOp::asin: return m_asin(x);
      case UnaryOp::acos: return m_acos(x);
      case UnaryOp::atan: return m_atan(x);
      case UnaryOp::asinh: return m_asinh(x);
      case UnaryOp::acosh: return m_acosh(x);
      case UnaryOp::atanh: return m_atanh(x);
      case UnaryOp::sinh: return m_sinh(x);
      case UnaryOp::cosh: return m_cosh(x);
      case UnaryOp::cbrt: return m_cbrt(x);
      case UnaryOp::is_finite: return is_finite(x) ? C(1) : C(0);
      default: return x;
    }
  }
}

/// Whether binary `op` is defined for compute type C (the primitives admit no other).
template <class C>
CANOPY_HD constexpr bool binary_defined(BinaryOp op) {
  const bool logical = op == BinaryOp::logical_and || op == BinaryOp::logical_or || op == BinaryOp::logical_xor;
  const bool cmp = op == BinaryOp::eq || op == BinaryOp::ne || op == BinaryOp::lt || op == BinaryOp::le ||
                   op == BinaryOp::gt || op == BinaryOp::ge;
  if constexpr (std::is_same_v<C, bool>) return logical || cmp || op == BinaryOp::max || op == BinaryOp::min;
  else if constexpr (std::is_integral_v<C>) return op != BinaryOp::atan2;
  else return !logical;
}

/// Comparisons write bool.
CANOPY_HD constexpr bool is_comparison(BinaryOp op) {
  return op == BinaryOp::eq || op == BinaryOp::ne || op == BinaryOp::lt || op == BinaryOp::le ||
         op == BinaryOp::gt || op == BinaryOp::ge;
}

template <class C>
CANOPY_HD constexpr bool compare(BinaryOp op, C x, C y) {
  switch (op) {
    case BinaryOp::eq: return x == y;
    case BinaryOp::ne: return x != y;
    case BinaryOp::lt: return x < y;
    case BinaryOp::le: return x <= y;
    case BinaryOp::gt: return x > y;
    default: return x >= y;
  }
}

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

/// op(x, y) for compute type C, arithmetic and logical ops (comparisons: compare()).
template <class C>
CANOPY_HD inline C binary(BinaryOp op, C x, C y) {
  if constexpr (std::is_same_v<C, bool>) {
    switch (op) {
      case BinaryOp::logical_and: case BinaryOp::min: return x && y;
      case BinaryOp::logical_or: case BinaryOp::max: return x || y;
      default: return x != y;  // logical_xor
    }
  } else if constexpr (std::is_integral_v<C>) {
    // Wrapping arithmetic in unsigned avoids signed-overflow UB; division by 0 as XLA's.
    using U = wrapping_t<C>;
    switch (op) {
      case BinaryOp::logical_and: return static_cast<C>(x & y);
      case BinaryOp::logical_or: return static_cast<C>(x | y);
      case BinaryOp::logical_xor: return static_cast<C>(x ^ y);
      case BinaryOp::add: return static_cast<C>(U(x) + U(y));
      case BinaryOp::sub: return static_cast<C>(U(x) - U(y));
      case BinaryOp::mul: return static_cast<C>(U(x) * U(y));
      case BinaryOp::div: return int_div(x, y);
      case BinaryOp::rem: return int_rem(x, y);
      case BinaryOp::max: return x > y ? x : y;
      case BinaryOp::min: return x < y ? x : y;
      default: return int_pow(x, y);  // pow
    }
  } else {
    switch (op) {
      case BinaryOp::add: return x + y;
      case BinaryOp::sub: return x - y;
      case BinaryOp::mul: return x * y;
      case BinaryOp::div: return x / y;
      case BinaryOp::rem: return m_fmod(denormal_as_zero(x), denormal_as_zero(y));
      case BinaryOp::pow: return m_pow(denormal_as_zero(x), denormal_as_zero(y));
      case BinaryOp::atan2: return m_atan2(denormal_as_zero(x), denormal_as_zero(y));
      // NaN-propagating, like lax.max/min.
      case BinaryOp::max: return x != x ? x : (y != y ? y : (x > y ? x : y));
      case BinaryOp::min: return x != x ? x : (y != y ? y : (x < y ? x : y));
      default: return x;
    }
  }
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

}  // namespace canopy::kernels::cuda::math
