// The `cosh` primitive (hyperbolic cosine): rules, samples, op. Its kernels come from its lowering
// on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Cosh {
  static constexpr std::string_view name = "cosh";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::cosh);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return cosh(a); },
                             [](const Array& a, const Array& y) { (void)y; return sinh(a); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Cosh>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -3, 3);
  }
};
CANOPY_REGISTER_PRIMITIVE(Cosh);
}  // namespace canopy::prim

namespace canopy {
Array cosh(const Array& x) { return bind1<prim::Cosh>({detail::to_float(x)}); }
}  // namespace canopy
