// JvpTrace: forward-mode differentiation by propagating (primal, tangent) pairs.
#include "jvp_trace.hpp"

#include "canopy/core/autodiff.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/error.hpp"
#include "canopy/numpy.hpp"

namespace canopy::detail {

Trace* JvpTracer::trace() const { return trace_.get(); }

Array zeros_for(const Aval& aval) { return zeros(aval.shape, aval.dtype); }

Array JvpTrace::box(Array primal, Array tangent) {
  if (!tangent.valid()) return primal;
  Aval aval = primal.aval();
  Device dev = primal.device();
  return make_tracer(std::move(aval), dev, std::make_shared<JvpTracer>(shared_from_this(), std::move(primal), std::move(tangent)));
}

std::pair<Array, Array> JvpTrace::unbox(const Array& x) const {
  if (auto* t = dynamic_cast<JvpTracer*>(x.tracer()); t && t->trace_.get() == this) return {t->primal, t->tangent};
  return {x, Array()};
}

Arrays JvpTrace::process(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) {
  Arrays primals, tangents;
  primals.reserve(in.size());
  tangents.reserve(in.size());
  bool any_tangent = false;
  for (const Array& x : in) {
    auto [primal, tangent] = unbox(x);
    any_tangent |= tangent.valid();
    primals.push_back(std::move(primal));
    tangents.push_back(std::move(tangent));
  }
  TraceGuard below(parent());
  if (!any_tangent || p.nondifferentiable) return detail::bind(p, primals, params);
  Arrays out_primals, out_tangents;
  if (p.jvp) {
    std::tie(out_primals, out_tangents) = p.jvp(primals, tangents, params);
  } else if (p.linear) {
    // A primitive linear in all its inputs is its own derivative: apply it to the tangents.
    out_primals = detail::bind(p, primals, params);
    for (std::size_t i = 0; i < tangents.size(); ++i)
      if (!tangents[i].valid()) tangents[i] = zeros_beside(primals[i].aval(), primals[i]);
    out_tangents = detail::bind(p, tangents, params);
  } else {
    raise<UnimplementedRule>(p.name, "jvp rule", "", "is not defined for this primitive",
                             "to differentiate through it, wrap the function that applies it in custom_jvp or custom_vjp");
  }
  Arrays out;
  out.reserve(out_primals.size());
  for (std::size_t i = 0; i < out_primals.size(); ++i) {
    // Integer and boolean results are locally constant: their tangent is zero (jax's float0).
    bool differentiable = i < out_tangents.size() && is_floating(out_primals[i].dtype());
    out.push_back(box(std::move(out_primals[i]), differentiable ? std::move(out_tangents[i]) : Array()));
  }
  return out;
}

std::pair<Arrays, Arrays> jvp_flat(const FlatFn& f, const Arrays& primals, const Arrays& tangents) {
  auto trace = std::make_shared<JvpTrace>(current_trace());
  Arrays in;
  in.reserve(primals.size());
  for (std::size_t i = 0; i < primals.size(); ++i) in.push_back(trace->box(primals[i], tangents[i]));
  Arrays out;
  {
    EndTrace ending{*trace};
    TraceGuard guard(trace.get());
    out = f(in);
  }
  Arrays out_primals, out_tangents;
  for (const Array& y : out) {
    auto [primal, tangent] = trace->unbox(y);
    out_primals.push_back(std::move(primal));
    out_tangents.push_back(std::move(tangent));
  }
  return {std::move(out_primals), std::move(out_tangents)};
}

}  // namespace canopy::detail
