// Program surgery for the control-flow primitives' rules: partial evaluation (which equations
// can run now and which must wait for unknown inputs, with the residuals between them), and
// turning inputs into constants or reordering them.
#include "canopy/core/ir.hpp"
#include "canopy/error.hpp"

namespace canopy::detail {

PartialEval partial_eval(const Program& p, const std::vector<bool>& known_inputs, const std::vector<int>& unknown_outs) {
  std::vector<bool> known(p.var_avals.size(), true);
  for (std::size_t i = 0; i < p.in_vars.size(); ++i) known[p.in_vars[i]] = known_inputs[i];
  std::vector<bool> residual(p.var_avals.size(), false);
  std::vector<int> residuals;
  PartialEval r;
  for (Program* q : {&r.known, &r.unknown}) {
    q->var_avals = p.var_avals;
    q->consts = p.consts;
  }
  for (const Eqn& e : p.eqns) {
    bool k = true;
    for (const Atom& a : e.in) k = k && (!a.is_var() || known[a.index]);
    if (k) {
      r.known.eqns.push_back(e);
      continue;
    }
    for (int v : e.out) known[v] = false;
    for (const Atom& a : e.in)
      if (a.is_var() && known[a.index] && !residual[a.index]) {
        residual[a.index] = true;
        residuals.push_back(a.index);
      }
    r.unknown.eqns.push_back(e);
  }
  std::vector<bool> wanted(p.outs.size(), false);
  for (int o : unknown_outs) {
    wanted[static_cast<std::size_t>(o)] = true;
    const Atom& a = p.outs[static_cast<std::size_t>(o)];
    // A known result that is asked for later becomes a residual passed straight through.
    if (a.is_var() && known[a.index] && !residual[a.index]) {
      residual[a.index] = true;
      residuals.push_back(a.index);
    }
    r.unknown.outs.push_back(a);
    r.unknown.out_avals.push_back(p.out_avals[static_cast<std::size_t>(o)]);
  }
  for (std::size_t i = 0; i < p.outs.size(); ++i) {
    if (wanted[i]) continue;
    if (p.outs[i].is_var() && !known[p.outs[i].index])
      raise<TypeError>("partial_eval", "output", concat(i), "depends on unknown inputs but was not asked for");
    r.known.outs.push_back(p.outs[i]);
    r.known.out_avals.push_back(p.out_avals[i]);
  }
  for (std::size_t i = 0; i < p.in_vars.size(); ++i)
    if (known_inputs[i]) r.known.in_vars.push_back(p.in_vars[i]);
  for (int v : residuals) {
    r.known.outs.push_back(Atom::variable(v));
    r.known.out_avals.push_back(p.var_avals[v]);
    r.unknown.in_vars.push_back(v);
  }
  for (std::size_t i = 0; i < p.in_vars.size(); ++i)
    if (!known_inputs[i]) r.unknown.in_vars.push_back(p.in_vars[i]);
  r.num_residuals = residuals.size();
  return r;
}

Program bind_inputs(const Program& p, const std::vector<bool>& which, const Arrays& values) {
  Program q = p;
  std::vector<int> const_of(p.var_avals.size(), -1);
  std::size_t next = 0;
  q.in_vars.clear();
  for (std::size_t i = 0; i < p.in_vars.size(); ++i) {
    if (!which[i]) {
      q.in_vars.push_back(p.in_vars[i]);
      continue;
    }
    const_of[p.in_vars[i]] = static_cast<int>(q.consts.size());
    q.consts.push_back(values.at(next++));
  }
  auto convert = [&](Atom& a) {
    if (a.is_var() && const_of[a.index] >= 0) a = Atom::constant(const_of[a.index]);
  };
  for (Eqn& e : q.eqns)
    for (Atom& a : e.in) convert(a);
  for (Atom& a : q.outs) convert(a);
  return q;
}

Program permute_inputs(const Program& p, const std::vector<int>& order) {
  Program q = p;
  for (std::size_t i = 0; i < order.size(); ++i) q.in_vars[i] = p.in_vars[static_cast<std::size_t>(order[i])];
  return q;
}

}  // namespace canopy::detail
