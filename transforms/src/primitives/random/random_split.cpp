// `random_split` (jax.random.split at the key level): every key of a u32[..., 2] key array becomes
// `shape` new keys, laid out as the Params' layout says: rules, samples. The op is
// canopy::random::split (random/src/keys.cpp). Its kernels: src/backends/<kind>/random.cpp.
#include "../rules.hpp"
#include "key_avals.hpp"

namespace canopy::prim {
struct RandomSplit {
  static constexpr std::string_view name = "random_split";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::RandomSplitParams;
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    detail::expect_shape(name, params.shape);
    return {DType::u32, detail::joined(detail::joined(detail::key_batch_shape(name, avals[0]), params.shape), {2}), false};
  }
  // A batch of keys is a bigger key array: the vmapped axis becomes a leading batch dim, and
  // each key draws exactly what it draws alone.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return {bind<RandomSplit>(detail::batched_at_front(x, bdims), params), {0}};
  }
  static std::vector<Sample<Params>> samples() {
    // Params filled field by field: brace-initialising a Shape inside the list trips GCC 12's
    // -Wmaybe-uninitialized on Shape's heap pointer.
    auto make = [](Shape shape, random::Layout layout) { Params p; p.shape = std::move(shape); p.layout = layout; return p; };
    std::vector<Sample<Params>> s;
    s.push_back({{detail::sample_keys({}, 1)}, make({2}, random::Layout::partitionable), "one key in two"});
    s.push_back({{detail::sample_keys({3}, 2)}, make({2, 2}, random::Layout::legacy), "batch of keys, legacy"});
    s.push_back({{detail::sample_keys({}, 3)}, make({0}, random::Layout::partitionable), "no keys"});
    return s;
  }
};
CANOPY_REGISTER_PRIMITIVE(RandomSplit);
}  // namespace canopy::prim

namespace canopy::detail {
Array random_split_p(const Array& keys, const Shape& shape, random::Layout layout) {
  return bind1<prim::RandomSplit>({keys}, {shape, layout});
}
}  // namespace canopy::detail
