// The `sqrt` primitive (square root): rules, samples, op. Its kernels come from its lowering on
// every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Sqrt {
  static constexpr std::string_view name = "sqrt";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::sqrt);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return sqrt(a); },
                             [](const Array& a, const Array& y) { (void)a; (void)y; return 0.5 / y; });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Sqrt>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, 0, 5);
  }
};
CANOPY_REGISTER_PRIMITIVE(Sqrt);
}  // namespace canopy::prim

namespace canopy {
Array sqrt(const Array& x) { return bind1<prim::Sqrt>({detail::to_float(x)}); }
}  // namespace canopy
