// The `erf_inv` primitive (inverse error function): rules, samples, op. jax.random.normal is
// sqrt(2) * erf_inv(u), so this sets its accuracy; the function itself (Giles' polynomials, as XLA)
// is kernels/include/canopy/kernels/erf_inv.hpp. Its kernels come from its lowering on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct ErfInv {
  static constexpr std::string_view name = "erf_inv";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::erf_inv);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<ErfInv>(x, bdims, params);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    // d/dx erfinv(x) = sqrt(pi)/2 * exp(erfinv(x)^2).
    return detail::unary_jvp(x, t, [](const Array& a) { return erf_inv(a); },
                             [](const Array&, const Array& y) { return 0.886226925452758 * exp(y * y); });
  }
  static std::vector<Sample<Params>> samples() { return detail::unary_samples<Params>(detail::kFloat, -0.999, 0.999); }
};
CANOPY_REGISTER_PRIMITIVE(ErfInv);
}  // namespace canopy::prim

namespace canopy {
Array erf_inv(const Array& x) { return bind1<prim::ErfInv>({detail::to_float(x)}); }
}  // namespace canopy
