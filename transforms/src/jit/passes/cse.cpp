// Common-subexpression elimination: one equation per (primitive, params, operands), one
// constant per scalar literal value.
#include <cstring>
#include <unordered_map>

#include "../../core/array_impl.hpp"
#include "canopy/core/params.hpp"
#include "canopy/core/primitive.hpp"
#include "passes.hpp"

namespace canopy::detail {
namespace {

/// (dtype, weak_type, bits) of a concrete scalar constant in host memory, or nothing for other
/// constants (a GPU scalar is not read back to be merged).
std::optional<std::pair<std::uint64_t, std::uint64_t>> literal_key(const Array& c) {
  if (c.is_tracer() || c.ndim() != 0 || in_device_memory(c)) return std::nullopt;
  std::uint64_t bits = 0;
  std::memcpy(&bits, c.raw_data(), itemsize(c.dtype()));
  return std::make_pair((static_cast<std::uint64_t>(c.dtype()) << 1) | (c.weak_type() ? 1u : 0u), bits);
}

struct PairHash {
  std::size_t operator()(const std::pair<std::uint64_t, std::uint64_t>& k) const { return hash_mix(k.first, k.second); }
};

}  // namespace

void eliminate_common_subexpressions(Program& p) {
  // Equal scalar literals become one constant.
  std::unordered_map<std::pair<std::uint64_t, std::uint64_t>, int, PairHash> literal_index;
  std::vector<int> const_subst(p.consts.size());
  for (std::size_t c = 0; c < p.consts.size(); ++c) {
    const_subst[c] = static_cast<int>(c);
    if (auto k = literal_key(p.consts[c])) const_subst[c] = literal_index.try_emplace(*k, static_cast<int>(c)).first->second;
  }
  auto canonical_const = [&](Atom& a) {
    if (a.is_constant()) a.index = const_subst[a.index];
  };

  std::vector<Atom> subst(p.var_avals.size(), Atom::zeros());
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> seen;  // hash -> kept equations
  std::vector<Eqn> kept;
  kept.reserve(p.eqns.size());
  for (Eqn& e : p.eqns) {
    std::uint64_t h = hash_mix(reinterpret_cast<std::uintptr_t>(e.prim), e.prim->params_hash(e.params_ref()));
    for (Atom& a : e.in) {
      if (a.is_var() && subst[a.index].index >= 0) a = subst[a.index];
      canonical_const(a);
      h = hash_mix(hash_mix(h, static_cast<std::uint64_t>(a.kind)), static_cast<std::uint64_t>(a.index));
    }
    const Eqn* same = nullptr;
    for (std::size_t k : seen[h]) {
      const Eqn& o = kept[k];
      if (o.prim == e.prim && o.in == e.in && e.prim->params_equal(o.params_ref(), e.params_ref())) {
        same = &o;
        break;
      }
    }
    if (same) {
      for (std::size_t i = 0; i < e.out.size(); ++i) subst[e.out[i]] = Atom::variable(same->out[i]);
      continue;
    }
    seen[h].push_back(kept.size());
    kept.push_back(std::move(e));
  }
  p.eqns = std::move(kept);
  for (Atom& a : p.outs) {
    if (a.is_var() && subst[a.index].index >= 0) a = subst[a.index];
    canonical_const(a);
  }
}

}  // namespace canopy::detail
