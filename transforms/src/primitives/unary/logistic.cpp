// The `logistic` primitive (1 / (1 + e^-x)): rules, samples, op. Its kernels come from its lowering
// on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Logistic {
  static constexpr std::string_view name = "logistic";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::logistic);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return logistic(a); },
                             [](const Array& a, const Array& y) { (void)a; (void)y; return y * (1.0 - y); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Logistic>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -5, 5);
  }
};
CANOPY_REGISTER_PRIMITIVE(Logistic);
}  // namespace canopy::prim

namespace canopy {
Array logistic(const Array& x) { return bind1<prim::Logistic>({detail::to_float(x)}); }
}  // namespace canopy
