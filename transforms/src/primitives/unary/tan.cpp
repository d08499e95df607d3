// The `tan` primitive (tangent): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Tan {
  static constexpr std::string_view name = "tan";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::tan);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return tan(a); },
                             [](const Array& a, const Array& y) { (void)a; (void)y; return 1.0 + y * y; });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Tan>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -1.5, 1.5);
  }
};
CANOPY_REGISTER_PRIMITIVE(Tan);
}  // namespace canopy::prim

namespace canopy {
Array tan(const Array& x) { return bind1<prim::Tan>({detail::to_float(x)}); }
}  // namespace canopy
