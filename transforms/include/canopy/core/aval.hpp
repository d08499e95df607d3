// Aval: the abstract value of an array (dtype, shape, weak_type) that shape/dtype rules work on.
// Prints as `f32[2,3]`; a weakly typed scalar prints as `f32[]{weak}` (JAX: `f32[]` weak_type=True).
#pragma once

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

/// `f32[2,3]`.
inline std::string to_string(const Aval& a) { return std::string(name(a.dtype)) + to_string(a.shape); }
inline std::ostream& operator<<(std::ostream& os, const Aval& a) { return os << to_string(a); }

}  // namespace canopy
