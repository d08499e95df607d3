// The `log1p` primitive (log(1 + x)): rules, samples, op. Its kernels come from its lowering on
// every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Log1p {
  static constexpr std::string_view name = "log1p";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::log1p);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return log1p(a); },
                             [](const Array& a, const Array& y) { (void)a; (void)y; return 1.0 / (a + 1.0); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Log1p>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -0.5, 3);
  }
};
CANOPY_REGISTER_PRIMITIVE(Log1p);
}  // namespace canopy::prim

namespace canopy {
Array log1p(const Array& x) { return bind1<prim::Log1p>({detail::to_float(x)}); }
}  // namespace canopy
