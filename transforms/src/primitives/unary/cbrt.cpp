// The `cbrt` primitive (cube root): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Cbrt {
  static constexpr std::string_view name = "cbrt";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::cbrt);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return cbrt(a); },
                             [](const Array& a, const Array& y) { (void)a; return 1.0 / (3.0 * y * y); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Cbrt>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    // Both signs, away from 0, where the derivative is infinite.
    auto s = detail::unary_samples<Params>(detail::kFloat, 0.25, 3);
    auto negative = detail::unary_samples<Params>(detail::kFloat, -3, -0.25);
    s.insert(s.end(), negative.begin(), negative.end());
    return s;
  }
};
CANOPY_REGISTER_PRIMITIVE(Cbrt);
}  // namespace canopy::prim

namespace canopy {
Array cbrt(const Array& x) { return bind1<prim::Cbrt>({detail::to_float(x)}); }
}  // namespace canopy
