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

/// The element types canopy arrays hold (ordered by the promotion lattice's rough height).
enum class DType : std::uint8_t { bool_, i32, u32, bf16, f32, f64 };

/// Number of dtypes, for tables indexed by DType.
inline constexpr int kNumDTypes = 6;

/// Bytes per element.
constexpr std::size_t itemsize(DType d) {
  switch (d) {
    case DType::bool_: return 1;
    case DType::bf16: return 2;
    case DType::f64: return 8;
    default: return 4;
  }
}
/// Short name as avals print it: `f32`, `i32`, `u32`, `bool`, `bf16`, `f64`.
constexpr std::string_view name(DType d) {
  constexpr std::string_view n[] = {"bool", "i32", "u32", "bf16", "f32", "f64"};
  return n[static_cast<int>(d)];
}
/// True for bf16, f32, f64.
constexpr bool is_floating(DType d) { return d == DType::bf16 || d == DType::f32 || d == DType::f64; }
/// True for i32, u32.
constexpr bool is_integer(DType d) { return d == DType::i32 || d == DType::u32; }

inline std::ostream& operator<<(std::ostream& os, DType d) { return os << name(d); }

/// The DType of a C++ element type (bool, int32_t, uint32_t, bf16, float, double).
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return DType::bool_;
  else if constexpr (std::is_same_v<T, std::int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return DType::u32;
  else if constexpr (std::is_same_v<T, bf16>) return DType::bf16;
  else if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else static_assert(sizeof(T) == 0, "canopy: unsupported element type (use bool, int32_t, uint32_t, bf16, float, double)");
}

/// Calls `f(T{})` with the C++ type of `d` (std::type_identity to avoid constructing values).
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::bool_: return f(std::type_identity<bool>{});
    case DType::i32: return f(std::type_identity<std::int32_t>{});
    case DType::u32: return f(std::type_identity<std::uint32_t>{});
    case DType::bf16: return f(std::type_identity<bf16>{});
    case DType::f32: return f(std::type_identity<float>{});
    default: return f(std::type_identity<double>{});
  }
}

}  // namespace canopy
