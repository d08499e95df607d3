// The `log` primitive (natural log): rules, samples, op. Its kernels come from its lowering on
// every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Log {
  static constexpr std::string_view name = "log";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::log);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return log(a); },
                             [](const Array& a, const Array& y) { (void)a; (void)y; return 1.0 / a; });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Log>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, 0.1, 5);
  }
};
CANOPY_REGISTER_PRIMITIVE(Log);
}  // namespace canopy::prim

namespace canopy {
Array log(const Array& x) { return bind1<prim::Log>({detail::to_float(x)}); }
}  // namespace canopy
