// Shared by the collective primitives: outside a vmap that binds their axis name they have
// nothing to reduce over, which is an error at the call (jax raises NameError there).
#pragma once

#include "../rules.hpp"
#include "canopy/core/batching.hpp"

namespace canopy::detail {

[[noreturn]] inline void raise_unbound_axis(std::string_view prim, const CollectiveParams& params) {
  raise<AxisNameError>(prim, "axis name", concat("'", params.axis_name, "'"), "is not bound by an enclosing vmap",
                       "pass axis_name(\"...\") to the vmap that maps over it");
}

/// Collectives of another axis act lane by lane on this axis: unary, batch axis unchanged.
template <class P>
BatchResult batch_lanewise(std::span<const Array> x, std::span<const int> bdims, const CollectiveParams& params) {
  return {bind<P>(x, params), {bdims[0]}};
}

}  // namespace canopy::detail
