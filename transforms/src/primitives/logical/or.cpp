// The `or` primitive (logical/bitwise or): rules, samples, op. Its kernels come from its lowering
// on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Or {
  static constexpr std::string_view name = "or";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr Lowering lowering = Lowering::binary(kernels::BinaryOp::logical_or);
  struct Params {};
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kInt | detail::kBool);
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Or>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kInt | detail::kBool, 0, 100); }
};
CANOPY_REGISTER_PRIMITIVE(Or);
}  // namespace canopy::prim

namespace canopy {
Array bitwise_or(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "or");
  return bind1<prim::Or>({p[0], p[1]});
}
}  // namespace canopy
