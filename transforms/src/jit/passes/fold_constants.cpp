// Constant folding: equations on concrete constants with small results run at compile time.
#include "canopy/core/primitive.hpp"
#include "passes.hpp"

namespace canopy::detail {
// Results are folded up to max_elements: static scalars and short index vectors, not broadcasts
// of a constant to a full array (those stay one cheap equation rather than a big constant).
void fold_constants(Program& p, std::int64_t max_elements) {
  std::vector<Atom> subst(p.var_avals.size(), Atom::zeros());
  std::vector<Eqn> kept;
  kept.reserve(p.eqns.size());
  TraceGuard eager(&EvalTrace::instance());
  for (Eqn& e : p.eqns) {
    for (Atom& a : e.in)
      if (a.is_var() && subst[a.index].index >= 0) a = subst[a.index];
    bool foldable = !e.prim->call_program && !e.prim->collective;
    for (const Atom& a : e.in) foldable = foldable && a.is_constant() && !p.consts[a.index].is_tracer();
    for (int v : e.out) foldable = foldable && p.var_avals[v].size() <= max_elements;
    if (!foldable) {
      kept.push_back(std::move(e));
      continue;
    }
    Arrays in;
    for (const Atom& a : e.in) in.push_back(p.consts[a.index]);
    Arrays out = detail::bind(*e.prim, in, e.params_ref());
    for (std::size_t i = 0; i < e.out.size(); ++i) {
      subst[e.out[i]] = Atom::constant(static_cast<int>(p.consts.size()));
      p.consts.push_back(std::move(out[i]));
    }
  }
  p.eqns = std::move(kept);
  for (Atom& a : p.outs)
    if (a.is_var() && subst[a.index].index >= 0) a = subst[a.index];
}

}  // namespace canopy::detail
