// StageTrace: records applications into a Program (see stage_trace.hpp).
#include "stage_trace.hpp"

#include "../autodiff/jvp_trace.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/error.hpp"

namespace canopy::detail {

Trace* StagedTracer::trace() const { return trace_.get(); }

Array StageTrace::new_input(const Aval& a) {
  int v = program.new_var(a);
  program.in_vars.push_back(v);
  return tracer_for(v);
}

Array StageTrace::tracer_for(int v) {
  return make_tracer(program.var_avals[v], Device::cpu(), std::make_shared<StagedTracer>(shared_from_this(), v));
}

int StageTrace::var_of(const Array& x) const {
  auto* t = dynamic_cast<StagedTracer*>(x.tracer());
  return t && t->trace_.get() == this ? t->var : -1;
}

Atom StageTrace::atom_of(const Array& x) {
  if (int v = var_of(x); v >= 0) return Atom::variable(v);
  auto [it, fresh] = const_index_.try_emplace(x.impl().get(), static_cast<int>(program.consts.size()));
  if (fresh) program.consts.push_back(x);
  return Atom::constant(it->second);
}

Arrays StageTrace::record(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) {
  std::vector<Aval> avals;
  avals.reserve(in.size());
  Eqn e{&p, p.clone_params(params), {}, {}};
  e.in.reserve(in.size());
  for (const Array& x : in) {
    avals.push_back(x.aval());
    e.in.push_back(atom_of(x));
  }
  std::vector<Aval> outs = p.abstract_eval(avals, params);
  Arrays res;
  res.reserve(outs.size());
  for (const Aval& a : outs) {
    int v = program.new_var(a);
    e.out.push_back(v);
    res.push_back(tracer_for(v));
  }
  program.eqns.push_back(std::move(e));
  return res;
}

bool StageTrace::any_staged(std::span<const Array> in) const {
  for (const Array& x : in)
    if (var_of(x) >= 0) return true;
  return false;
}

Arrays StageTrace::process(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) {
  if (mode_ == Mode::dependent && !any_staged(in)) {
    TraceGuard below(parent());
    return detail::bind(p, in, params);
  }
  return record(p, in, params);
}

Arrays StageTrace::process_call(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) {
  if (mode_ == Mode::dependent) {
    if (!any_staged(in)) return process(p, in, params);
    // A call linear in its staged inputs with known residuals first (what jvp derives) is
    // recorded; any other call on known and staged values is split into its equations.
    const std::size_t fixed = p.num_fixed_inputs ? static_cast<std::size_t>(p.num_fixed_inputs(params)) : 0;
    bool linear = fixed > 0;  // (a known input after the residuals is a zero tangent: still linear)
    for (std::size_t i = 0; i < fixed && i < in.size(); ++i) linear &= var_of(in[i]) < 0;
    if (!linear) return eval_program(*p.call_program(params), in);
  }
  return record(p, in, params);
}

Program StageTrace::finish(std::span<const Array> outs) {
  for (const Array& y : outs) {
    if (!y.valid()) raise<TypeError>("jit", "output", "", "is an empty Array handle");
    program.outs.push_back(atom_of(y));
    program.out_avals.push_back(y.aval());
  }
  const_index_.clear();
  return std::move(program);
}

Program stage(const FlatFn& f, const std::vector<Aval>& in_avals) {
  auto stage = std::make_shared<StageTrace>(current_trace(), StageTrace::Mode::all);
  Arrays in;
  in.reserve(in_avals.size());
  for (const Aval& a : in_avals) in.push_back(stage->new_input(a));
  Arrays out;
  {
    EndTrace end{*stage};
    TraceGuard guard(stage.get());
    out = f(in);
  }
  return stage->finish(out);
}

}  // namespace canopy::detail
