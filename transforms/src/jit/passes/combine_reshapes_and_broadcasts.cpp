// Chains of shape changes made one: a reshape of a reshape reads the first one's operand, a
// broadcast of a broadcast broadcasts the first one's operand at once, and a reshape or broadcast
// that keeps its operand's shape is its operand. Reverse-mode programs are full of them (the
// gradient of a mean: a scalar broadcast to a vector, then to a matrix); once combined, a
// broadcast of a scalar is a scalar input of the fused loop that reads it instead of a kernel
// and a full-size array, and the intermediate equations are left for dead-code elimination.
#include "../../primitives/common.hpp"
#include "passes.hpp"

namespace canopy::detail {

void combine_reshapes_and_broadcasts(Program& p) {
  std::vector<Atom> subst(p.var_avals.size(), Atom::zeros());
  std::vector<const Eqn*> defined_by(p.var_avals.size(), nullptr);
  std::vector<Eqn> kept;
  kept.reserve(p.eqns.size());  // never reallocated: defined_by points into it
  auto shape_of = [&](const Atom& a) -> const Shape& { return p.aval_of(a).shape; };
  for (Eqn& e : p.eqns) {
    for (Atom& a : e.in)
      if (a.is_var() && subst[a.index].index >= 0) a = subst[a.index];
    const bool reshape = e.prim->name == "reshape", broadcast = e.prim->name == "broadcast_in_dim";
    if ((reshape || broadcast) && e.in.size() == 1 && e.out.size() == 1 && !e.in[0].is_zero()) {
      const Shape& out_shape = p.var_avals[static_cast<std::size_t>(e.out[0])].shape;
      const Eqn* inner = e.in[0].is_var() ? defined_by[static_cast<std::size_t>(e.in[0].index)] : nullptr;
      if (inner && inner->prim == e.prim && !inner->in[0].is_zero()) {
        if (broadcast) {
          // Operand dim k lands on the inner result's dim d1[k], which lands on the result's d2[d1[k]].
          const std::vector<int>& d1 = broadcast_dimensions_of(inner->params_ref());
          const std::vector<int>& d2 = broadcast_dimensions_of(e.params_ref());
          std::vector<int> dims;
          for (int d : d1) dims.push_back(d2[static_cast<std::size_t>(d)]);
          e.params = broadcast_params(out_shape, std::move(dims));
        }
        e.in[0] = inner->in[0];
      }
      // A broadcast keeping the shape maps dim i to dim i (its dims increase, one per dim).
      if (shape_of(e.in[0]) == out_shape) {
        subst[static_cast<std::size_t>(e.out[0])] = e.in[0];
        continue;
      }
    }
    kept.push_back(std::move(e));
    for (int v : kept.back().out) defined_by[static_cast<std::size_t>(v)] = &kept.back();
  }
  p.eqns = std::move(kept);
  for (Atom& a : p.outs)
    if (a.is_var() && subst[a.index].index >= 0) a = subst[a.index];
}

}  // namespace canopy::detail
