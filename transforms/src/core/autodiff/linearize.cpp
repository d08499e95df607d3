// Reverse mode as linearize + transpose. vjp_flat runs f under a JvpTrace whose input tangents
// are variables of a StageTrace: every primal computation runs (its inputs are known), and every
// tangent computation, necessarily linear, is recorded. The pullback walks that record backwards,
// applying each primitive's transpose rule with Array ops, so it can be traced again (grad of grad).
#include <unordered_map>

#include "canopy/core/autodiff.hpp"
#include "canopy/core/ir.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/error.hpp"
#include "canopy/ops.hpp"
#include "../array_impl.hpp"
#include "../ir/stage_trace.hpp"
#include "jvp_trace.hpp"

namespace canopy::detail {

bool is_staged_tangent(const Array& t) {
  auto* s = t.valid() ? dynamic_cast<StagedTracer*>(t.tracer()) : nullptr;
  return s && s->trace_->mode() == StageTrace::Mode::dependent;
}

namespace {
void accumulate(std::unordered_map<int, Array>& cts, int var, Array ct) {
  auto [it, fresh] = cts.try_emplace(var, ct);
  if (!fresh) it->second = add(it->second, ct);
}
}  // namespace

Arrays Pullback::operator()(const Arrays& cotangents) const {
  const Program& lp = *program_;
  if (cotangents.size() != lp.outs.size())
    raise<TypeError>("vjp", "pullback", "", concat("takes ", lp.outs.size(), " cotangents, got ", cotangents.size()));
  // Zeros the walk makes (for cotangents that never arrived) go where the given cotangents are, so
  // that the gradient of a GPU computation stays on that GPU; an input's own zeros go where that
  // input was, when vjp saw it concrete (below).
  const Array* placed = nullptr;
  for (const Array& c : cotangents)
    if (c.valid() && !c.is_tracer() && in_device_memory(c)) placed = &c;
  auto zeros_here = [&](const Aval& a) { return placed ? zeros_beside(a, *placed) : zeros_for(a); };
  std::unordered_map<int, Array> cts;
  for (std::size_t i = 0; i < lp.outs.size(); ++i) {
    if (!lp.outs[i].is_var() || !cotangents[i].valid()) continue;
    const Aval& want = lp.var_avals[lp.outs[i].index];
    if (cotangents[i].shape() != want.shape)
      raise<ShapeError>("vjp", "cotangent", concat("output ", i),
                        concat("has shape ", to_string(cotangents[i].aval()), " but the output is ", to_string(want)));
    accumulate(cts, lp.outs[i].index, cotangents[i].dtype() == want.dtype ? cotangents[i] : cotangents[i].astype(want.dtype));
  }
  for (auto e = lp.eqns.rbegin(); e != lp.eqns.rend(); ++e) {
    Arrays out_cts;
    bool any = false;
    for (int v : e->out) {
      auto it = cts.find(v);
      any |= it != cts.end();
      out_cts.push_back(it != cts.end() ? it->second : Array());
    }
    if (!any) continue;
    if (!e->prim->transpose)
      raise<UnimplementedRule>(e->prim->name, "transpose rule", "", "is not defined for this primitive",
                               "reverse mode (grad, vjp) needs one for every primitive applied to tangents");
    for (std::size_t i = 0; i < out_cts.size(); ++i)
      if (!out_cts[i].valid()) out_cts[i] = zeros_here(lp.var_avals[e->out[i]]);
    Arrays primals;
    std::vector<Aval> avals;
    for (const Atom& a : e->in) {
      primals.push_back(a.is_constant() ? lp.consts[a.index] : Array());
      avals.push_back(lp.aval_of(a));
    }
    Arrays in_cts = e->prim->transpose(out_cts, primals, avals, e->params_ref());
    for (std::size_t i = 0; i < e->in.size() && i < in_cts.size(); ++i)
      if (e->in[i].is_var() && in_cts[i].valid()) accumulate(cts, e->in[i].index, in_cts[i]);
  }
  Arrays res;
  for (std::size_t i = 0; i < lp.in_vars.size(); ++i) {
    const int v = lp.in_vars[i];
    if (auto it = cts.find(v); it != cts.end()) {
      res.push_back(it->second);
    } else if (i < inputs_.size() && inputs_[i].known) {
      // jax's instantiate_zeros against the primal's aval: the gradient is a value like the input,
      // placed where it is (an f32 input of an integer-valued function on a GPU: zeros on that GPU).
      res.push_back(zeros_at(lp.var_avals[v], Placement{inputs_[i].device, inputs_[i].committed}));
    } else {
      res.push_back(zeros_here(lp.var_avals[v]));
    }
  }
  return res;
}

namespace {

/// Runs f once, evaluating the primal and recording the tangent map as a linear program.
std::pair<Arrays, std::shared_ptr<Program>> linearize_program(const FlatFn& f, const Arrays& primals) {
  auto stage = std::make_shared<StageTrace>(current_trace(), StageTrace::Mode::dependent);
  auto jvp = std::make_shared<JvpTrace>(stage.get());
  Arrays in;
  for (const Array& x : primals) in.push_back(jvp->box(x, stage->new_input(x.aval())));
  Arrays out;
  {
    EndTrace end_stage{*stage}, end_jvp{*jvp};
    TraceGuard guard(jvp.get());
    out = f(in);
  }
  Arrays out_primals;
  auto lp = std::make_shared<Program>(std::move(stage->program));
  for (const Array& y : out) {
    auto [primal, tangent] = jvp->unbox(y);
    // A tangent that is known (not staged) does not depend on the inputs: it is a zero.
    int v = tangent.valid() ? stage->var_of(tangent) : -1;
    lp->outs.push_back(v >= 0 ? Atom::variable(v) : Atom::zeros());
    lp->out_avals.push_back(primal.aval());
    out_primals.push_back(std::move(primal));
  }
  return {std::move(out_primals), std::move(lp)};
}

}  // namespace

std::pair<Arrays, Pullback> vjp_flat(const FlatFn& f, const Arrays& primals) {
  std::vector<Pullback::InputPlacement> inputs;
  for (const Array& x : primals)
    inputs.push_back(x.is_tracer() ? Pullback::InputPlacement{}
                                   : Pullback::InputPlacement{x.impl()->device, x.impl()->committed, true});
  auto [out, lp] = linearize_program(f, primals);
  return {std::move(out), Pullback(std::move(lp), std::move(inputs))};
}

std::pair<Arrays, Pushforward> linearize_flat(const FlatFn& f, const Arrays& primals) {
  auto [out, lp] = linearize_program(f, primals);
  return {std::move(out), Pushforward(std::move(lp))};
}

Arrays Pushforward::operator()(const Arrays& tangents) const {
  const Program& lp = *program_;
  if (tangents.size() != lp.in_vars.size())
    raise<TypeError>("linearize", "jvp function", "", concat("takes ", lp.in_vars.size(), " tangents, got ", tangents.size()));
  for (std::size_t i = 0; i < tangents.size(); ++i) {
    const Aval& want = lp.var_avals[lp.in_vars[i]];
    if (!(tangents[i].shape() == want.shape))
      raise<ShapeError>("linearize", "tangent", concat("input ", i),
                        concat("has shape ", to_string(tangents[i].aval()), " but the primal is ", to_string(want)));
  }
  // Replay the recorded linear equations forward on the new tangents.
  return eval_program(lp, tangents);
}

}  // namespace canopy::detail
