// The `add` primitive (x + y): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Add {
  static constexpr std::string_view name = "add";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr Lowering lowering = Lowering::binary(kernels::BinaryOp::add);
  struct Params {};
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kFloat | detail::kInt);
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params&) {
    return {primals[0].valid() ? Array() : detail::unbroadcast(ct[0], avals[0]),
            primals[1].valid() ? Array() : detail::unbroadcast(ct[0], avals[1])};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Add>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kFloat | detail::kInt, -3, 3); }
};
CANOPY_REGISTER_PRIMITIVE(Add);
}  // namespace canopy::prim

namespace canopy {
Array add(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "add");
  if (p[0].dtype() == DType::bool_) return logical_or(p[0], p[1]);  // jnp.add on bools
  return bind1<prim::Add>({p[0], p[1]});
}
}  // namespace canopy
