// The `sign` primitive (-1, 0 or 1): rules, samples, op. Its kernels come from its lowering on
// every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Sign {
  static constexpr std::string_view name = "sign";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::sign);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat | detail::kInt);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array>, const Params&) {
    return detail::zero_jvp(x, [&](const Array& a) { return sign(a); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Sign>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat | detail::kInt, -3, 3);
  }
};
CANOPY_REGISTER_PRIMITIVE(Sign);
}  // namespace canopy::prim

namespace canopy {
Array sign(const Array& x) { return bind1<prim::Sign>({x}); }
}  // namespace canopy
