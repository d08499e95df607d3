// The `atan` primitive (arctangent): rules, samples, op. Its kernels come from its lowering on
// every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Atan {
  static constexpr std::string_view name = "atan";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::atan);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return atan(a); },
                             [](const Array& a, const Array& y) { (void)y; return 1.0 / (1.0 + a * a); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Atan>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -3, 3);
  }
};
CANOPY_REGISTER_PRIMITIVE(Atan);
}  // namespace canopy::prim

namespace canopy {
Array atan(const Array& x) { return bind1<prim::Atan>({detail::to_float(x)}); }
}  // namespace canopy
