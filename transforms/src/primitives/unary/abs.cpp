// The `abs` primitive (|x|): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Abs {
  static constexpr std::string_view name = "abs";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::abs);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat | detail::kInt);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    // jax's rule: the tangent itself where x >= 0 (so d|x|/dx is 1 at 0, not sign(0) = 0).
    return detail::unary_jvp(x, t, [](const Array& a) { return abs(a); },
                             [](const Array& a, const Array&) { return where(a >= 0, ones_like(a), -ones_like(a)); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Abs>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat | detail::kInt, -3, 3);
  }
};
CANOPY_REGISTER_PRIMITIVE(Abs);
}  // namespace canopy::prim

namespace canopy {
Array abs(const Array& x) { return bind1<prim::Abs>({x}); }
}  // namespace canopy
