// Shared by the collective primitives: under vmap they act on the lanes of the vmap that binds
// their axis name (their `collective` rule), on a pmap's device threads they meet the other
// devices (devices/collectives.cpp), and anywhere else there is nothing to reduce over, which is
// an error at the call (jax raises NameError there).
#pragma once

#include "../../devices/collectives.hpp"
#include "../rules.hpp"
#include "canopy/core/batching.hpp"

namespace canopy::detail {

[[noreturn]] inline void raise_unbound_axis(std::string_view prim, std::string_view axis_name) {
  raise<AxisNameError>(prim, "axis name", concat("'", axis_name, "'"), "is not bound by an enclosing vmap or pmap",
                       "pass axis_name(\"...\") to the vmap or pmap that maps over it");
}

/// The pmap axis `axis_name` this device thread is running, or the unbound-axis error.
inline const AxisContext& running_axis(std::string_view prim, std::string_view axis_name) {
  const AxisContext* a = find_axis(axis_name);
  if (!a || a->index < 0) raise_unbound_axis(prim, axis_name);
  return *a;
}

/// Collectives of another axis act lane by lane on this axis: unary, batch axis unchanged.
template <class P>
BatchResult batch_lanewise(std::span<const Array> x, std::span<const int> bdims, const typename P::Params& params) {
  return {bind<P>(x, params), {bdims[0]}};
}

}  // namespace canopy::detail
