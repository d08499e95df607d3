// What the control-flow combinators need to know about a traced value: whether a predicate
// or index is concrete (so one branch runs), or batched (so every branch runs and a select
// merges them), and whether reverse-mode differentiation is recording through it.
#pragma once

#include <cstdint>
#include <optional>

#include "canopy/array.hpp"

namespace canopy::detail {

/// The value of a scalar predicate or index when it is known here (a concrete Array, or the
/// primal of a forward-mode tracer); nullopt when it differs across a vmap batch or is abstract.
std::optional<std::int64_t> concrete_scalar(const Array& x);

/// Whether any lane of a (possibly vmap-batched) boolean scalar is true; nullopt when no
/// concrete value underlies it.
std::optional<bool> any_lane(const Array& x);

/// Whether t is a tangent variable of reverse mode's linearization (a StagedTracer of it).
bool is_staged_tangent(const Array& t);

/// Whether x carries a tangent that reverse mode (grad, vjp, linearize) is recording.
bool recorded_for_reverse_mode(const Array& x);

}  // namespace canopy::detail
