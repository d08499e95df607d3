// Aval: the abstract value of an array (dtype, shape, weak_type) that shape/dtype rules work on.
// Prints as `f32[2,3]`; a weakly typed scalar prints as `f32[]{weak}` (JAX: `f32[]` weak_type=True).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "canopy/dtype.hpp"
#include "canopy/shape.hpp"

namespace canopy {

/// Abstract value: what abstract_eval rules compute and what a tracer carries.
struct Aval {
  DType dtype = DType::f32;
  Shape shape;
  /// JAX's weak_type: a C++ scalar operand that defers to the other operand's dtype.
  bool weak_type = false;

  std::size_t ndim() const { return shape.size(); }
  std::int64_t size() const { return shape_size(shape); }
  friend bool operator==(const Aval&, const Aval&) = default;
};

/// A hash of dtype, shape and weak type (jit's cache keys, CSE).
inline std::size_t hash_value(const Aval& a) {
  std::uint64_t h = 0xcbf29ce484222325ull ^ ((static_cast<std::uint64_t>(a.dtype) << 1) | (a.weak_type ? 1u : 0u));
  for (std::int64_t d : a.shape) h = (h ^ static_cast<std::uint64_t>(d)) * 0x100000001b3ull;
  return static_cast<std::size_t>(h);
}

/// `f32[2,3]`.
inline std::string to_string(const Aval& a) { return std::string(name(a.dtype)) + to_string(a.shape); }
inline std::ostream& operator<<(std::ostream& os, const Aval& a) { return os << to_string(a); }

}  // namespace canopy

template <>
struct std::hash<canopy::Aval> {
  std::size_t operator()(const canopy::Aval& a) const noexcept { return canopy::hash_value(a); }
};
