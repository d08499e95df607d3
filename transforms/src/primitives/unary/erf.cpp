// The `erf` primitive (error function): rules, samples, op. Its kernels come from its lowering on
// every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Erf {
  static constexpr std::string_view name = "erf";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::erf);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return erf(a); },
                             [](const Array& a, const Array& y) { (void)a; (void)y; return 1.1283791670955126 * exp(-(a * a))  /* 2/sqrt(pi) e^{-x^2} */; });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Erf>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -3, 3);
  }
};
CANOPY_REGISTER_PRIMITIVE(Erf);
}  // namespace canopy::prim

namespace canopy {
Array erf(const Array& x) { return bind1<prim::Erf>({detail::to_float(x)}); }
}  // namespace canopy
