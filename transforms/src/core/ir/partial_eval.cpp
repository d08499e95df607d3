// Program surgery for the control-flow primitives' rules: a program's jvp as a program, partial
// evaluation (which equations can run now and which must wait for unknown inputs, with the
// residuals between them), and turning inputs into constants or reordering them.
#include "../autodiff/jvp_trace.hpp"
#include "canopy/core/ir.hpp"
#include "canopy/core/jit.hpp"
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

Program jvp_program(const Program& p) {
  const std::size_t m = p.in_vars.size();
  const std::vector<Aval> in = p.in_avals();
  std::vector<Aval> avals = in;
  avals.insert(avals.end(), in.begin(), in.end());
  return stage(
      [&](const Arrays& v) {
        Arrays primals(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m));
        Arrays tangents(v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
        auto [o, ot] = jvp_flat([&](const Arrays& a) { return eval_program(p, a); }, primals, tangents);
        const std::size_t n = o.size();
        for (std::size_t i = 0; i < n; ++i) o.push_back(ot[i].valid() ? ot[i] : zeros_for(o[i].aval()));
        return o;
      },
      avals);
}

PartialEval linearize_split(const Program& jvp) {
  const std::size_t m = jvp.in_vars.size() / 2, n = jvp.outs.size() / 2;
  std::vector<bool> known(2 * m, false);
  std::fill(known.begin(), known.begin() + static_cast<std::ptrdiff_t>(m), true);
  std::vector<int> tangent_outs;
  for (std::size_t i = 0; i < n; ++i) tangent_outs.push_back(static_cast<int>(n + i));
  return partial_eval(jvp, known, tangent_outs);
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
  q.for_each_atom([&](Atom& a) {
    if (a.is_var() && const_of[a.index] >= 0) a = Atom::constant(const_of[a.index]);
  });
  return q;
}

Program permute_inputs(const Program& p, const std::vector<int>& order) {
  Program q = p;
  for (std::size_t i = 0; i < order.size(); ++i) q.in_vars[i] = p.in_vars[static_cast<std::size_t>(order[i])];
  return q;
}

}  // namespace canopy::detail
