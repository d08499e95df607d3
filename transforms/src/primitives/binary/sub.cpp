// The `sub` primitive (x - y): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Sub {
  static constexpr std::string_view name = "sub";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr Lowering lowering = Lowering::binary(kernels::BinaryOp::sub);
  struct Params {};
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kFloat | detail::kInt);
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params&) {
    return {primals[0].valid() ? Array() : detail::unbroadcast(ct[0], avals[0]),
            primals[1].valid() ? Array() : detail::unbroadcast(-ct[0], avals[1])};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Sub>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kFloat | detail::kInt, -3, 3); }
};
CANOPY_REGISTER_PRIMITIVE(Sub);
}  // namespace canopy::prim

namespace canopy {
Array sub(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "sub");
  return bind1<prim::Sub>({p[0], p[1]});
}
}  // namespace canopy
