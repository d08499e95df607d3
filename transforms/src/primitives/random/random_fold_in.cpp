// `random_fold_in` (jax.random.fold_in at the key level): key i of a u32[..., 2] key array hashed
// with the u32 message i (same batch shape): rules, samples. The op is canopy::random::fold_in
// (random/src/keys.cpp). Its kernels: src/backends/<kind>/random.cpp.
#include "../rules.hpp"
#include "key_avals.hpp"

namespace canopy::prim {
struct RandomFoldIn {
  static constexpr std::string_view name = "random_fold_in";
  static constexpr Arity arity = Arity::exactly(2);
  struct Params {};
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    const Shape batch = detail::key_batch_shape(name, avals[0]);
    if (avals[1].dtype != DType::u32 || !(avals[1].shape == batch))
      detail::raise<TypeError>(name, "data", "argument 1",
                               detail::concat(to_string(avals[1]), " must be u32 of the keys' batch shape ", to_string(batch)));
    return avals[0];
  }
  // A batch of keys is a bigger key array: the vmapped axis becomes a leading batch dim.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return {bind<RandomFoldIn>(detail::batched_at_front(x, bdims), params), {0}};
  }
  static std::vector<Sample<Params>> samples() {
    return {{{detail::sample_keys({}, 1), scalar(7u)}, {}, "one key"},
            {{detail::sample_keys({3}, 2), array({0u, 1u, 4000000000u})}, {}, "batch"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(RandomFoldIn);
}  // namespace canopy::prim

namespace canopy::detail {
Array random_fold_in_p(const Array& keys, const Array& data) { return bind1<prim::RandomFoldIn>({keys, data}); }
std::shared_ptr<const void> random_fold_in_params() { return std::make_shared<prim::RandomFoldIn::Params>(); }
}  // namespace canopy::detail
