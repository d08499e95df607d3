// Looking through tracers for the control-flow combinators (cond, switch_, while_loop).
#include "canopy/core/control.hpp"

#include "autodiff/jvp_trace.hpp"
#include "batching/batch_trace.hpp"
#include "canopy/numpy.hpp"

namespace canopy::detail {

std::optional<std::int64_t> concrete_scalar(const Array& x) {
  if (!x.is_tracer()) return x.astype(DType::i32).item<std::int32_t>();
  if (auto* j = dynamic_cast<JvpTracer*>(x.tracer())) return concrete_scalar(j->primal);
  return std::nullopt;
}

std::optional<bool> any_lane(const Array& x) {
  if (!x.is_tracer()) return x.size() > 0 && max(x.astype(DType::i32)).item<std::int32_t>() != 0;
  if (auto* j = dynamic_cast<JvpTracer*>(x.tracer())) return any_lane(j->primal);
  if (auto* b = dynamic_cast<BatchTracer*>(x.tracer())) return any_lane(b->value);
  return std::nullopt;
}

bool recorded_for_reverse_mode(const Array& x) {
  if (!x.is_tracer()) return false;
  if (auto* j = dynamic_cast<JvpTracer*>(x.tracer()))
    return is_staged_tangent(j->tangent) || recorded_for_reverse_mode(j->primal) || recorded_for_reverse_mode(j->tangent);
  if (auto* b = dynamic_cast<BatchTracer*>(x.tracer())) return recorded_for_reverse_mode(b->value);
  return false;
}

}  // namespace canopy::detail
