// Element types of canopy arrays: the DType enum, its properties, and the C++ type mapping.
// Cheap header (no Boost/oneDNN), below both kernels and transforms.
#pragma once

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
  explicit bf16(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) { bits = static_cast<std::uint16_t>((u >> 16) | 0x40); return; }
    u += 0x7fffu + ((u >> 16) & 1u);
    bits = static_cast<std::uint16_t>(u >> 16);
  }
  /// Widens exactly to f32.
  explicit operator float() const {
    std::uint32_t u = std::uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

/// IEEE binary16 storage type (round-to-nearest-even on store; subnormals, infinities and NaN
/// kept; NaN becomes the quiet NaN 0x7e00).
struct f16 {
  std::uint16_t bits = 0;
  f16() = default;
  /// Rounds an f32 to the nearest f16 (ties to even; overflow gives infinity).
  explicit f16(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    const std::uint32_t sign = u & 0x80000000u;
    u ^= sign;
    std::uint32_t h;
    if (u >= 0x47800000u) {  // |f| >= 2^16, infinity or NaN: no finite f16 rounds from there
      h = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (u < 0x38800000u) {  // below f16's smallest normal 2^-14: a subnormal or zero
      // Adding 0.5 aligns the f16 subnormal's 10 bits at the bottom of the sum's mantissa; the
      // addition itself rounds to nearest even.
      float r;
      std::memcpy(&r, &u, 4);
      r += 0.5f;
      std::uint32_t ru;
      std::memcpy(&ru, &r, 4);
      h = ru - 0x3f000000u;
    } else {  // normal: rebias the exponent, round the 13 dropped bits to nearest even
      h = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;  // 0xc8000000 is (15 - 127) << 23
    }
    bits = static_cast<std::uint16_t>(h | (sign >> 16));
  }
  /// Widens exactly to f32.
  explicit operator float() const {
    const std::uint32_t sign = std::uint32_t(bits & 0x8000u) << 16;
    const std::uint32_t exp = bits & 0x7c00u, mant = bits & 0x3ffu;
    std::uint32_t u;
    if (exp == 0x7c00u) {
      u = 0x7f800000u | (mant << 13);  // infinity or NaN (payload kept)
    } else if (exp != 0) {
      u = ((exp >> 10) + 112u) << 23 | (mant << 13);
    } else {  // zero or subnormal: mant * 2^-24, exact in f32
      float f = static_cast<float>(mant) * 0x1p-24f;
      std::memcpy(&u, &f, 4);
    }
    u |= sign;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
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

}  // namespace canopy
