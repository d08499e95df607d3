// The `cos` primitive (cosine): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Cos {
  static constexpr std::string_view name = "cos";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::cos);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return cos(a); },
                             [](const Array& a, const Array& y) { (void)a; (void)y; return -sin(a); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Cos>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -4, 4);
  }
};
CANOPY_REGISTER_PRIMITIVE(Cos);
}  // namespace canopy::prim

namespace canopy {
Array cos(const Array& x) { return bind1<prim::Cos>({detail::to_float(x)}); }
}  // namespace canopy
