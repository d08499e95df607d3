// The `acosh` primitive (inverse hyperbolic cosine): rules, samples, op. Its kernels come from its
// lowering on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Acosh {
  static constexpr std::string_view name = "acosh";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::acosh);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return acosh(a); },
                             [](const Array& a, const Array& y) { (void)y; return rsqrt((a - 1.0) * (a + 1.0)); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Acosh>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, 1.1, 4);
  }
};
CANOPY_REGISTER_PRIMITIVE(Acosh);
}  // namespace canopy::prim

namespace canopy {
Array acosh(const Array& x) { return bind1<prim::Acosh>({detail::to_float(x)}); }
}  // namespace canopy
