// Forward mode as a trace: each tracer carries a primal and a tangent; every primitive applied
// to one runs its jvp rule one level down, so primal and tangent computations can themselves be
// traced by enclosing transforms (grad of grad, jvp of grad).
#pragma once

#include <memory>

#include "canopy/core/custom.hpp"
#include "canopy/core/trace.hpp"
#include "../array_impl.hpp"

namespace canopy::detail {

class JvpTrace;

/// (primal, tangent); an invalid tangent is a symbolic zero.
class JvpTracer final : public TracerImpl {
 public:
  JvpTracer(std::shared_ptr<JvpTrace> trace, Array primal, Array tangent)
      : trace_(std::move(trace)), primal(std::move(primal)), tangent(std::move(tangent)) {}
  Trace* trace() const override;
  std::shared_ptr<JvpTrace> trace_;
  Array primal, tangent;
};

class JvpTrace final : public Trace, public std::enable_shared_from_this<JvpTrace> {
 public:
  using Trace::Trace;
  Arrays process(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) override;
  Arrays process_custom(const CustomRule& rule, std::span<const Array> in) override;  // custom_rules.cpp
  /// A tracer of this trace, or `primal` itself when the tangent is a symbolic zero.
  Array box(Array primal, Array tangent);
  /// The (primal, tangent) of x as this trace sees it: non-tracers have a zero tangent.
  std::pair<Array, Array> unbox(const Array& x) const;
};

/// Ends a transformation's trace when its scope closes, also by exception, so that tracers
/// that escaped it are recognised as such.
struct EndTrace {
  Trace& trace;
  ~EndTrace() { trace.end(); }
};

/// A zero of x's dtype and shape (a tangent instantiated where a rule needs a real array).
Array zeros_for(const Aval& aval);

}  // namespace canopy::detail
