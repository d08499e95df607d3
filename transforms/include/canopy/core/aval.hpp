// Aval: the abstract value of an array (dtype, shape, weak_type) that shape/dtype rules work on.
// Prints as `f32[2,3]`; a weakly typed scalar prints as `f32[]{weak}` (JAX: `f32[]` weak_type=True).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

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

namespace detail {
/// The ShapeError for a shape the checks below refuse, naming `api`: a negative dimension, or
/// `zeros: shape [..] has N elements, more than int64 can count` (bytes when `dtype` is given).
[[noreturn]] void raise_bad_shape(std::string_view api, const Shape& shape, std::optional<DType> dtype);
/// ShapeError unless `shape` can hold `dtype` elements: no negative dimension, and the element
/// count, the byte count and every stride fit in int64. One multiply per dimension.
inline void check_shape(std::string_view api, const Shape& shape, DType dtype) {
  if (checked_nbytes(shape, static_cast<std::int64_t>(itemsize(dtype))) < 0) raise_bad_shape(api, shape, dtype);
}
/// check_shape of an aval: every abstract_eval result and every allocated buffer goes through it.
inline void check_aval(std::string_view api, const Aval& a) { check_shape(api, a.shape, a.dtype); }
/// The element count of a requested shape whose dtype is not known yet; ShapeError as above.
inline std::int64_t checked_size(std::string_view api, const Shape& shape) {
  const std::int64_t n = checked_nbytes(shape, 1);
  if (n < 0) raise_bad_shape(api, shape, std::nullopt);
  return n;
}
}  // namespace detail

}  // namespace canopy

template <>
struct std::hash<canopy::Aval> {
  std::size_t operator()(const canopy::Aval& a) const noexcept { return canopy::hash_value(a); }
};
