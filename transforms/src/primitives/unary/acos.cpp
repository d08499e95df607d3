// The `acos` primitive (arccosine): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Acos {
  static constexpr std::string_view name = "acos";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::acos);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return acos(a); },
                             [](const Array& a, const Array& y) { (void)y; return -rsqrt(1.0 - a * a); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Acos>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -0.9, 0.9);
  }
};
CANOPY_REGISTER_PRIMITIVE(Acos);
}  // namespace canopy::prim

namespace canopy {
Array acos(const Array& x) { return bind1<prim::Acos>({detail::to_float(x)}); }
}  // namespace canopy
