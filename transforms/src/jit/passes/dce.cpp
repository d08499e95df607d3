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

  // Constants nothing reads any more are dropped and the rest renumbered.
  std::vector<int> remap(p.consts.size(), -1);
  auto mark = [&](const Atom& a) {
    if (a.is_constant()) remap[a.index] = 0;
  };
  for (const Eqn& e : p.eqns) std::for_each(e.in.begin(), e.in.end(), mark);
  std::for_each(p.outs.begin(), p.outs.end(), mark);
  Arrays consts;
  for (std::size_t c = 0; c < p.consts.size(); ++c)
    if (remap[c] == 0) {
      remap[c] = static_cast<int>(consts.size());
      consts.push_back(std::move(p.consts[c]));
    }
  p.consts = std::move(consts);
  auto renumber = [&](Atom& a) {
    if (a.is_constant()) a.index = remap[a.index];
  };
  for (Eqn& e : p.eqns) std::for_each(e.in.begin(), e.in.end(), renumber);
  std::for_each(p.outs.begin(), p.outs.end(), renumber);
}

}  // namespace canopy::detail
