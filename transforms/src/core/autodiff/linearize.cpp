// Reverse mode as linearize + transpose. vjp_flat runs f under a JvpTrace whose input tangents
// are variables of a StageTrace: every primal computation runs (its inputs are known), and every
// tangent computation, necessarily linear, is recorded. The pullback walks that record backwards,
// applying each primitive's transpose rule with Array ops, so it can be traced again (grad of grad).
#include <unordered_map>

#include "canopy/core/autodiff.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/error.hpp"
#include "canopy/ops.hpp"
#include "jvp_trace.hpp"

namespace canopy::detail {
namespace {

/// An operand of a recorded equation: a variable of the linear program or a known Array.
struct Atom {
  int var = -1;  ///< >= 0: the variable; -1: `value`
  Array value;
  Aval aval;
};

/// One recorded application of a linear primitive.
struct Eqn {
  const PrimitiveInfo* prim;
  std::shared_ptr<const void> params;
  std::vector<Atom> in;
  std::vector<int> out;  ///< output variables
  ParamsRef ref() const { return {params.get(), prim->params_type}; }
};

class StageTrace;

class StagedTracer final : public TracerImpl {
 public:
  StagedTracer(std::shared_ptr<StageTrace> t, int var) : trace_(std::move(t)), var(var) {}
  Trace* trace() const override;
  std::shared_ptr<StageTrace> trace_;
  int var;
};

/// Records applications with at least one staged input; runs everything else one level down.
class StageTrace final : public Trace, public std::enable_shared_from_this<StageTrace> {
 public:
  using Trace::Trace;
  Arrays process(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) override {
    std::vector<Atom> atoms;
    std::vector<Aval> avals;
    bool staged = false;
    for (const Array& x : in) {
      Atom a;
      a.aval = x.aval();
      if (auto* t = dynamic_cast<StagedTracer*>(x.tracer()); t && t->trace_.get() == this) {
        a.var = t->var;
        staged = true;
      } else {
        a.value = x;
      }
      avals.push_back(a.aval);
      atoms.push_back(std::move(a));
    }
    if (!staged) {
      TraceGuard below(parent());
      return detail::bind(p, in, params);
    }
    std::vector<Aval> outs = p.abstract_eval(avals, params);
    Eqn e{&p, p.clone_params(params), std::move(atoms), {}};
    Arrays res;
    for (Aval& a : outs) {
      int v = new_var(a);
      e.out.push_back(v);
      res.push_back(tracer_for(v));
    }
    eqns.push_back(std::move(e));
    return res;
  }
  int new_var(const Aval& a) {
    var_avals.push_back(a);
    return static_cast<int>(var_avals.size()) - 1;
  }
  Array tracer_for(int v) {
    return make_tracer(var_avals[v], Device::cpu(), std::make_shared<StagedTracer>(shared_from_this(), v));
  }
  /// The variable x stands for, or -1 when x is known.
  int var_of(const Array& x) const {
    auto* t = dynamic_cast<StagedTracer*>(x.tracer());
    return t && t->trace_.get() == this ? t->var : -1;
  }

  std::vector<Aval> var_avals;
  std::vector<Eqn> eqns;
};

Trace* StagedTracer::trace() const { return trace_.get(); }

}  // namespace

bool is_staged_tangent(const Array& t) { return t.valid() && dynamic_cast<StagedTracer*>(t.tracer()) != nullptr; }

/// The recorded linear map from input tangents to output tangents.
struct LinearProgram {
  std::vector<Aval> var_avals;
  std::vector<Eqn> eqns;
  std::vector<int> in_vars;   ///< one per primal input
  std::vector<Atom> outs;     ///< one per output (var -1: does not depend on the inputs)
};

namespace {
Array instantiate(const Array& x, const Aval& aval) { return x.valid() ? x : zeros_for(aval); }

void accumulate(std::unordered_map<int, Array>& cts, int var, Array ct) {
  auto [it, fresh] = cts.try_emplace(var, ct);
  if (!fresh) it->second = add(it->second, ct);
}
}  // namespace

Arrays Pullback::operator()(const Arrays& cotangents) const {
  const LinearProgram& lp = *program_;
  if (cotangents.size() != lp.outs.size())
    raise<TypeError>("vjp", "pullback", "", concat("takes ", lp.outs.size(), " cotangents, got ", cotangents.size()));
  std::unordered_map<int, Array> cts;
  for (std::size_t i = 0; i < lp.outs.size(); ++i) {
    if (lp.outs[i].var < 0 || !cotangents[i].valid()) continue;
    const Aval& want = lp.var_avals[lp.outs[i].var];
    if (cotangents[i].shape() != want.shape)
      raise<ShapeError>("vjp", "cotangent", concat("output ", i),
                        concat("has shape ", to_string(cotangents[i].aval()), " but the output is ", to_string(want)));
    accumulate(cts, lp.outs[i].var, cotangents[i].dtype() == want.dtype ? cotangents[i] : cotangents[i].astype(want.dtype));
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
      if (!out_cts[i].valid()) out_cts[i] = zeros_for(lp.var_avals[e->out[i]]);
    Arrays primals;
    std::vector<Aval> avals;
    for (const Atom& a : e->in) {
      primals.push_back(a.var < 0 ? a.value : Array());
      avals.push_back(a.aval);
    }
    Arrays in_cts = e->prim->transpose(out_cts, primals, avals, e->ref());
    for (std::size_t i = 0; i < e->in.size() && i < in_cts.size(); ++i)
      if (e->in[i].var >= 0 && in_cts[i].valid()) accumulate(cts, e->in[i].var, in_cts[i]);
  }
  Arrays res;
  for (int v : lp.in_vars) {
    auto it = cts.find(v);
    res.push_back(it != cts.end() ? it->second : zeros_for(lp.var_avals[v]));
  }
  return res;
}

namespace {

/// Runs f once, evaluating the primal and recording the tangent map as a linear program.
std::pair<Arrays, std::shared_ptr<LinearProgram>> linearize_program(const FlatFn& f, const Arrays& primals) {
  auto stage = std::make_shared<StageTrace>(current_trace());
  auto jvp = std::make_shared<JvpTrace>(stage.get());
  auto lp = std::make_shared<LinearProgram>();
  Arrays in;
  for (const Array& x : primals) {
    int v = stage->new_var(x.aval());
    lp->in_vars.push_back(v);
    in.push_back(jvp->box(x, stage->tracer_for(v)));
  }
  Arrays out;
  {
    EndTrace end_stage(*stage), end_jvp(*jvp);
    TraceGuard guard(jvp.get());
    out = f(in);
  }
  Arrays out_primals;
  for (const Array& y : out) {
    auto [primal, tangent] = jvp->unbox(y);
    Atom a;
    a.aval = primal.aval();
    if (tangent.valid()) a.var = stage->var_of(tangent);
    // A tangent that is known (not staged) does not depend on the inputs: its cotangent is dropped.
    lp->outs.push_back(std::move(a));
    out_primals.push_back(std::move(primal));
  }
  lp->var_avals = std::move(stage->var_avals);
  lp->eqns = std::move(stage->eqns);
  return {std::move(out_primals), std::move(lp)};
}

}  // namespace

std::pair<Arrays, Pullback> vjp_flat(const FlatFn& f, const Arrays& primals) {
  auto [out, lp] = linearize_program(f, primals);
  return {std::move(out), Pullback(std::move(lp))};
}

std::pair<Arrays, Pushforward> linearize_flat(const FlatFn& f, const Arrays& primals) {
  auto [out, lp] = linearize_program(f, primals);
  return {std::move(out), Pushforward(std::move(lp))};
}

Arrays Pushforward::operator()(const Arrays& tangents) const {
  const LinearProgram& lp = *program_;
  if (tangents.size() != lp.in_vars.size())
    raise<TypeError>("linearize", "jvp function", "", concat("takes ", lp.in_vars.size(), " tangents, got ", tangents.size()));
  std::vector<Array> env(lp.var_avals.size());
  for (std::size_t i = 0; i < tangents.size(); ++i) {
    const Aval& want = lp.var_avals[lp.in_vars[i]];
    if (!(tangents[i].shape() == want.shape))
      raise<ShapeError>("linearize", "tangent", concat("input ", i),
                        concat("has shape ", to_string(tangents[i].aval()), " but the primal is ", to_string(want)));
    env[lp.in_vars[i]] = tangents[i];
  }
  // Replay the recorded linear equations forward on the new tangents.
  for (const Eqn& e : lp.eqns) {
    Arrays in;
    for (const Atom& a : e.in) in.push_back(a.var >= 0 ? instantiate(env[a.var], a.aval) : a.value);
    Arrays out = detail::bind(*e.prim, in, e.ref());
    for (std::size_t i = 0; i < e.out.size(); ++i) env[e.out[i]] = out[i];
  }
  Arrays res;
  for (const Atom& a : lp.outs) res.push_back(a.var >= 0 ? instantiate(env[a.var], a.aval) : zeros_for(a.aval));
  return res;
}

}  // namespace canopy::detail
