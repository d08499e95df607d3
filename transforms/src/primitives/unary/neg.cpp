// The `neg` primitive (-x): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Neg {
  static constexpr std::string_view name = "neg";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::neg);
  struct Params {};
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat | detail::kInt);
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params&) {
    (void)primals, (void)avals;
    return {-ct[0]};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Neg>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat | detail::kInt, -3, 3);
  }
};
CANOPY_REGISTER_PRIMITIVE(Neg);
}  // namespace canopy::prim

namespace canopy {
Array neg(const Array& x) { return bind1<prim::Neg>({x}); }
}  // namespace canopy
