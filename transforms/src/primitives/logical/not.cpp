// The `not` primitive (logical on bool, bitwise on integers). Its kernels come from its lowering on
// every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Not {
  static constexpr std::string_view name = "not";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::logical_not);
  struct Params {};
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kInt | detail::kBool);
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Not>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kInt | detail::kBool, 0, 100);
  }
};
CANOPY_REGISTER_PRIMITIVE(Not);
}  // namespace canopy::prim

namespace canopy {
Array bitwise_not(const Array& x) { return bind1<prim::Not>({x}); }
}  // namespace canopy
