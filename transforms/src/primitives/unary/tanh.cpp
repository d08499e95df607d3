// The `tanh` primitive (hyperbolic tangent): rules, samples, op. Its kernels come from its lowering
// on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Tanh {
  static constexpr std::string_view name = "tanh";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::tanh);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return tanh(a); },
                             [](const Array& a, const Array& y) { (void)a; (void)y; return 1.0 - y * y; });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Tanh>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -3, 3);
  }
};
CANOPY_REGISTER_PRIMITIVE(Tanh);
}  // namespace canopy::prim

namespace canopy {
Array tanh(const Array& x) { return bind1<prim::Tanh>({detail::to_float(x)}); }
}  // namespace canopy
