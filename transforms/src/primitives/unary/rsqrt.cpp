// The `rsqrt` primitive (1 / sqrt(x)): rules, samples, op. Its kernels come from its lowering on
// every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Rsqrt {
  static constexpr std::string_view name = "rsqrt";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::rsqrt);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return rsqrt(a); },
                             [](const Array& a, const Array& y) { (void)a; (void)y; return -0.5 * y / a; });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Rsqrt>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, 0.1, 5);
  }
};
CANOPY_REGISTER_PRIMITIVE(Rsqrt);
}  // namespace canopy::prim

namespace canopy {
Array rsqrt(const Array& x) { return bind1<prim::Rsqrt>({detail::to_float(x)}); }
}  // namespace canopy
