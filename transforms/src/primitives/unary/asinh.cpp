// The `asinh` primitive (inverse hyperbolic sine): rules, samples, op. Its kernels come from its
// lowering on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Asinh {
  static constexpr std::string_view name = "asinh";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::asinh);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return asinh(a); },
                             [](const Array& a, const Array& y) { (void)y; return rsqrt(a * a + 1.0); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Asinh>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -3, 3);
  }
};
CANOPY_REGISTER_PRIMITIVE(Asinh);
}  // namespace canopy::prim

namespace canopy {
Array asinh(const Array& x) { return bind1<prim::Asinh>({detail::to_float(x)}); }
}  // namespace canopy
