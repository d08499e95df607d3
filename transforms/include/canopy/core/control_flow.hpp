// The type-erased cores of the control-flow primitives: the caller's functions, flattened to
// functions of Arrays, are staged into programs and applied as `scan` / `while` primitives.
// <canopy/transforms/control_flow.hpp> is the pytree front end.
#pragma once

#include <cstdint>
#include <vector>

#include "canopy/core/autodiff.hpp"

namespace canopy::detail {

/// lax.scan on flat Arrays: `body` maps (carry..., x...) to (carry..., y...), with `step_avals`
/// the avals of those inputs (x without its leading axis). Returns (final carry..., stacked ys...).
Arrays scan_flat(const FlatFn& body, const std::vector<Aval>& step_avals, const Arrays& carry, const Arrays& xs,
                 std::int64_t length, bool reverse);

/// lax.while_loop on flat Arrays: `cond` maps the carry to a bool scalar, `body` the carry to the
/// next carry (same avals). Returns the final carry.
Arrays while_flat(const FlatFn& cond, const FlatFn& body, const Arrays& carry);

/// lax.switch on flat Arrays: branches[clamp(index)](operands...), every branch a function of the
/// operands with results of the same avals.
Arrays cond_flat(const Array& index, const std::vector<FlatFn>& branches, const Arrays& operands);

/// Whether control flow on these values must be staged as a primitive (a transformation or jit
/// is tracing) rather than run as a plain loop.
bool staged_control_flow(const Arrays& values);

}  // namespace canopy::detail
