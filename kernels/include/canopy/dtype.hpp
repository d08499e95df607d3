// Element types of canopy arrays: the DType enum, its properties, and the C++ type mapping.
// Cheap header (no Boost/oneDNN), below both kernels and transforms. The 16-bit float types are
// constexpr so that CUDA kernels (nvcc --expt-relaxed-constexpr) convert exactly as the CPU does.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string_view>
#include <type_traits>

namespace canopy {

/// bfloat16 storage type: the upper 16 bits of an IEEE f32 (round-to-nearest-even on store).
struct bf16 {
  std::uint16_t bits = 0;
  bf16() = default;
  /// Rounds an f32 to the nearest bf16 (ties to even; NaN stays NaN).
  constexpr explicit bf16(float f) {
    std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) { bits = static_cast<std::uint16_t>((u >> 16) | 0x40); return; }
    u += 0x7fffu + ((u >> 16) & 1u);
    bits = static_cast<std::uint16_t>(u >> 16);
  }
  /// Widens exactly to f32.
  constexpr explicit operator float() const { return std::bit_cast<float>(std::uint32_t(bits) << 16); }
};

/// IEEE binary16 storage type (round-to-nearest-even on store; subnormals, infinities and NaN
/// kept; NaN becomes the quiet NaN 0x7e00).
struct f16 {
  std::uint16_t bits = 0;
  f16() = default;
  /// Rounds an f32 to the nearest f16 (ties to even; overflow gives infinity).
  constexpr explicit f16(float f) {
    std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t sign = u & 0x80000000u;
    u ^= sign;
    std::uint32_t h;
    if (u >= 0x47800000u) {  // |f| >= 2^16, infinity or NaN: no finite f16 rounds from there
      h = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (u < 0x38800000u) {  // below f16's smallest normal 2^-14: a subnormal or zero
      // Adding 0.5 aligns the f16 subnormal's 10 bits at the bottom of the sum's mantissa; the
      // addition itself rounds to nearest even.
      const float r = std::bit_cast<float>(u) + 0.5f;
      h = std::bit_cast<std::uint32_t>(r) - 0x3f000000u;
    } else {  // normal: rebias the exponent, round the 13 dropped bits to nearest even
      h = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;  // 0xc8000000 is (15 - 127) << 23
    }
    bits = static_cast<std::uint16_t>(h | (sign >> 16));
  }
  /// Widens exactly to f32.
  constexpr explicit operator float() const {
    const std::uint32_t sign = std::uint32_t(bits & 0x8000u) << 16;
    const std::uint32_t exp = bits & 0x7c00u, mant = bits & 0x3ffu;
    std::uint32_t u;
    if (exp == 0x7c00u) {
      u = 0x7f800000u | (mant << 13);  // infinity or NaN (payload kept)
    } else if (exp != 0) {
      u = ((exp >> 10) + 112u) << 23 | (mant << 13);
    } else {  // zero or subnormal: mant * 2^-24, exact in f32
      u = std::bit_cast<std::uint32_t>(static_cast<float>(mant) * 0x1p-24f);
    }
    return std::bit_cast<float>(u | sign);
  }
};

/// The element types canopy arrays hold. New ones were appended, so the order is not the
/// promotion lattice's (promotion.cpp holds that).
enum class DType : std::uint8_t { bool_, i32, u32, bf16, f32, f64, u8, i8, u16, i16, f16, i64, u64 };

/// Number of dtypes, for tables indexed by DType.
inline constexpr int kNumDTypes = 13;

/// Bytes per element.
constexpr std::size_t itemsize(DType d) {
  switch (d) {
    case DType::bool_: case DType::u8: case DType::i8: return 1;
    case DType::bf16: case DType::f16: case DType::u16: case DType::i16: return 2;
    case DType::f64: case DType::i64: case DType::u64: return 8;
    default: return 4;
  }
}
/// Short name as avals print it: `f32`, `i32`, `u8`, `bool`, `bf16`, `f16`, `i64`, ...
constexpr std::string_view name(DType d) {
  constexpr std::string_view n[] = {"bool", "i32", "u32", "bf16", "f32", "f64", "u8",
                                    "i8",   "u16", "i16", "f16",  "i64", "u64"};
  return n[static_cast<int>(d)];
}
/// numpy's name, as JAX prints it in `dtype=`: `float32`, `int8`, `uint8`, `bool`, `bfloat16`, ...
constexpr std::string_view numpy_name(DType d) {
  constexpr std::string_view n[] = {"bool",  "int32", "uint32",  "bfloat16", "float32", "float64", "uint8",
                                    "int8",  "uint16", "int16", "float16",  "int64",   "uint64"};
  return n[static_cast<int>(d)];
}
/// True for bf16, f16, f32, f64.
constexpr bool is_floating(DType d) {
  return d == DType::bf16 || d == DType::f16 || d == DType::f32 || d == DType::f64;
}
/// True for the unsigned integers u8, u16, u32, u64 (not bool).
constexpr bool is_unsigned(DType d) {
  return d == DType::u8 || d == DType::u16 || d == DType::u32 || d == DType::u64;
}
/// True for the signed and unsigned integers (not bool).
constexpr bool is_integer(DType d) {
  return is_unsigned(d) || d == DType::i8 || d == DType::i16 || d == DType::i32 || d == DType::i64;
}

inline std::ostream& operator<<(std::ostream& os, DType d) { return os << name(d); }

/// The DType of a C++ element type (bool, the fixed-width integers of 8 to 64 bits, bf16, f16,
/// float, double).
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return DType::bool_;
  else if constexpr (std::is_same_v<T, std::int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return DType::u32;
  else if constexpr (std::is_same_v<T, bf16>) return DType::bf16;
  else if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return DType::u8;
  else if constexpr (std::is_same_v<T, std::int8_t>) return DType::i8;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return DType::u16;
  else if constexpr (std::is_same_v<T, std::int16_t>) return DType::i16;
  else if constexpr (std::is_same_v<T, f16>) return DType::f16;
  else if constexpr (std::is_same_v<T, std::int64_t>) return DType::i64;
  else if constexpr (std::is_same_v<T, std::uint64_t>) return DType::u64;
  else if constexpr (std::is_integral_v<T> && sizeof(T) == 8)  // long long beside int64_t's long
    return std::is_signed_v<T> ? DType::i64 : DType::u64;
  else static_assert(sizeof(T) == 0, "canopy: unsupported element type (use bool, (u)int8/16/32/64_t, bf16, f16, float, double)");
}

/// The type arithmetic on T happens in: float for the 16-bit floats, T otherwise.
template <class T>
using compute_type_t = std::conditional_t<std::is_same_v<T, bf16> || std::is_same_v<T, f16>, float, T>;

/// The unsigned type integer arithmetic on C wraps in without undefined behaviour: C's unsigned
/// counterpart, widened to `unsigned` for the 8- and 16-bit types (which would otherwise promote to
/// signed int, where 65535 * 65535 overflows). C itself for floating-point types and bool.
template <class C, bool = std::is_integral_v<C> && !std::is_same_v<C, bool>>
struct wrapping { using type = C; };
template <class C>
struct wrapping<C, true> {
  using type = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
};
template <class C>
using wrapping_t = typename wrapping<C>::type;

namespace detail {

/// v rounded to f32 toward zero, with the last bit set when inexact ("round to odd"). Rounding that
/// to a 16-bit float to nearest gives the correctly rounded result, which rounding to nearest
/// twice (f64 -> f32 -> f16) does not: 1 + 2^-11 + 2^-30 would land on the tie 1 + 2^-11.
/// constexpr so that CUDA kernels round the same way.
template <class C>
constexpr float to_f32_round_to_odd(C v) {
  if constexpr (std::is_same_v<C, float> || std::is_same_v<C, bool> || (std::is_integral_v<C> && sizeof(C) <= 2)) {
    return static_cast<float>(v);  // exact
  } else if constexpr (std::is_floating_point_v<C>) {
    const float f = static_cast<float>(v);
    if (f != f || static_cast<C>(f) == v) return f;
    std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    if ((static_cast<C>(f) > v) == (v > 0)) --u;  // |f| > |v|: one step toward zero (inf to max)
    return std::bit_cast<float>(u | 1u);
  } else {  // integers: keep the top 24 significant bits of |v|, OR the rest into the last one
    using U = std::make_unsigned_t<C>;
    const bool neg = v < 0;
    const U m = neg ? static_cast<U>(U(0) - static_cast<U>(v)) : static_cast<U>(v);
    int shift = 0;
    while ((m >> shift) >= (U(1) << 24)) ++shift;
    U kept = m >> shift;
    if (shift && (m & ((U(1) << shift) - 1))) kept |= 1u;
    // kept * 2^shift is exact in f32 (kept < 2^24, shift <= 40)
    const float f = static_cast<float>(kept) * std::bit_cast<float>(static_cast<std::uint32_t>(127 + shift) << 23);
    return neg ? -f : f;
  }
}

/// v (a value of T's compute type) stored as T: 16-bit floats round once, correctly (through
/// to_f32_round_to_odd); other types convert as C++ does.
template <class T, class C>
constexpr T store_as(C v) {
  if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) return T(to_f32_round_to_odd(v));
  else return static_cast<T>(v);
}

}  // namespace detail

/// Calls `f(std::type_identity<T>{})` with the C++ type of `d` (no value is constructed).
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::bool_: return f(std::type_identity<bool>{});
    case DType::i32: return f(std::type_identity<std::int32_t>{});
    case DType::u32: return f(std::type_identity<std::uint32_t>{});
    case DType::bf16: return f(std::type_identity<bf16>{});
    case DType::f32: return f(std::type_identity<float>{});
    case DType::u8: return f(std::type_identity<std::uint8_t>{});
    case DType::i8: return f(std::type_identity<std::int8_t>{});
    case DType::u16: return f(std::type_identity<std::uint16_t>{});
    case DType::i16: return f(std::type_identity<std::int16_t>{});
    case DType::f16: return f(std::type_identity<f16>{});
    case DType::i64: return f(std::type_identity<std::int64_t>{});
    case DType::u64: return f(std::type_identity<std::uint64_t>{});
    default: return f(std::type_identity<double>{});
  }
}

/// Calls `f(std::type_identity<W>{})` with the unsigned integer W of `bytes` bytes (1, 2, 4 or 8):
/// elements that are only moved travel as such words.
template <class F>
decltype(auto) visit_width(std::size_t bytes, F&& f) {
  switch (bytes) {
    case 1: return f(std::type_identity<std::uint8_t>{});
    case 2: return f(std::type_identity<std::uint16_t>{});
    case 4: return f(std::type_identity<std::uint32_t>{});
    default: return f(std::type_identity<std::uint64_t>{});
  }
}

}  // namespace canopy
