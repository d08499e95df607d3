// The `atanh` primitive (inverse hyperbolic tangent): rules, samples, op. Its kernels come from its
// lowering on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Atanh {
  static constexpr std::string_view name = "atanh";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::atanh);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return atanh(a); },
                             [](const Array& a, const Array& y) { (void)a; (void)y; return 1.0 / ((1.0 - a) * (1.0 + a)); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Atanh>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -0.9, 0.9);
  }
};
CANOPY_REGISTER_PRIMITIVE(Atanh);
}  // namespace canopy::prim

namespace canopy {
Array atanh(const Array& x) { return bind1<prim::Atanh>({detail::to_float(x)}); }
}  // namespace canopy
