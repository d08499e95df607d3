// Makes canopy::Array a pytree leaf (kept apart so array.hpp does not pull in the pytree layer).
#pragma once

#include <type_traits>

#include "canopy/array.hpp"
#include "canopy/pytree/traits.hpp"

namespace canopy {
/// An Array is one leaf, whatever its shape.
template <>
struct is_leaf<Array> : std::true_type {};
}  // namespace canopy
