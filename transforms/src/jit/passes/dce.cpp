// Dead-code elimination: keep the equations whose results reach an output, backwards.
#include <algorithm>

#include "passes.hpp"

namespace canopy::detail {

void eliminate_dead_code(Program& p) {
  std::vector<bool> live(p.var_avals.size(), false);
  for (const Atom& a : p.outs)
    if (a.is_var()) live[a.index] = true;
  std::vector<bool> keep(p.eqns.size(), false);
  for (std::size_t k = p.eqns.size(); k-- > 0;) {
    const Eqn& e = p.eqns[k];
    keep[k] = std::any_of(e.out.begin(), e.out.end(), [&](int v) { return live[v]; });
    if (keep[k])
      for (const Atom& a : e.in)
        if (a.is_var()) live[a.index] = true;
  }
  std::vector<Eqn> kept;
  kept.reserve(p.eqns.size());
  for (std::size_t k = 0; k < p.eqns.size(); ++k)
    if (keep[k]) kept.push_back(std::move(p.eqns[k]));
  p.eqns = std::move(kept);

  p.drop_unused_consts();
}

}  // namespace canopy::detail
