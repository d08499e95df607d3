// The primitive registry: every primitive adds itself here at static-initialisation time
// (CANOPY_REGISTER_PRIMITIVE), so tests and transformations can walk the closed set.
#pragma once

#include <span>
#include <string_view>

namespace canopy {

struct PrimitiveInfo;

/// All registered primitives, sorted by name.
std::span<const PrimitiveInfo* const> registered_primitives();
/// The primitive called `name`, or null.
const PrimitiveInfo* find_primitive(std::string_view name);

namespace detail {
/// Adds `p`; returns true so it can initialise a namespace-scope constant.
bool register_primitive(const PrimitiveInfo& p);
}  // namespace detail

}  // namespace canopy
