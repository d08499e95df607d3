// One key taken out of a split is one fold_in. In the partitionable layout (JAX's default since
// 0.5), new key t of split(key, shape) (t row-major over shape) is threefry2x32(key, (0, t)) for
// t < 2^32, which is fold_in(key, t) bit for bit. A training step's `key, sub = split(key)` then
// hashes each key it keeps where the key goes, instead of hashing every new key into an array
// that slices copy out (on a GPU: one kernel where there were two). The split, once no slice
// reads it, is left for dead-code elimination; the reshape after it for combine_reshapes.
#include <limits>

#include "../../primitives/random/key_avals.hpp"
#include "canopy/core/registry.hpp"
#include "passes.hpp"

namespace canopy::detail {
namespace {

/// The flat index of the one new key a slice with bounds `b` takes out of the [shape..., 2]
/// result of splitting one key into `shape`, or -1 where it takes more or less than one key.
std::int64_t taken_key(const SliceBounds& b, const Shape& shape) {
  const std::size_t n = shape.size();
  if (b.start.size() != n + 1) return -1;
  std::int64_t t = 0;
  for (std::size_t d = 0; d < n; ++d) {
    if (b.limit[d] != b.start[d] + 1) return -1;
    t = t * shape[d] + b.start[d];
  }
  return b.start[n] == 0 && b.limit[n] == 2 && b.strides[n] == 1 ? t : -1;
}

}  // namespace

void split_keys_as_fold_ins(Program& p) {
  const PrimitiveInfo* fold_in = find_primitive("random_fold_in");
  const PrimitiveInfo* reshape = find_primitive("reshape");
  std::vector<int> split_at(p.var_avals.size(), -1);  // per variable: the split in `kept` defining it
  std::vector<Eqn> kept;
  kept.reserve(p.eqns.size());
  for (Eqn& e : p.eqns) {
    const int s = e.prim->name == "slice" && e.in[0].is_var() ? split_at[static_cast<std::size_t>(e.in[0].index)] : -1;
    if (s >= 0) {
      const Eqn& split = kept[static_cast<std::size_t>(s)];
      const std::int64_t t = taken_key(slice_bounds_of(e.params_ref()), split.params_ref().get<RandomSplitParams>().shape);
      if (t >= 0 && t <= std::numeric_limits<std::uint32_t>::max()) {
        const Atom operand = split.in[0];
        const Aval key_aval = p.aval_of(operand);  // fold_in's result: its key's aval
        const int key = p.new_var(key_aval);
        const Atom data = Atom::constant(static_cast<int>(p.consts.size()));
        p.consts.push_back(scalar(static_cast<std::uint32_t>(t)));
        kept.push_back(Eqn{fold_in, random_fold_in_params(), {operand, data}, {key}});
        kept.push_back(Eqn{reshape, reshape_params(p.var_avals[static_cast<std::size_t>(e.out[0])].shape),
                           {Atom::variable(key)}, std::move(e.out)});
        continue;
      }
    }
    kept.push_back(std::move(e));
    const Eqn& k = kept.back();
    if (k.prim->name == "random_split" && p.aval_of(k.in[0]).shape == Shape{2} &&
        k.params_ref().get<RandomSplitParams>().layout == random::Layout::partitionable)
      split_at[static_cast<std::size_t>(k.out[0])] = static_cast<int>(kept.size()) - 1;
  }
  p.eqns = std::move(kept);
}

}  // namespace canopy::detail
