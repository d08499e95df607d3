// The `asin` primitive (arcsine): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Asin {
  static constexpr std::string_view name = "asin";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::asin);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return asin(a); },
                             [](const Array& a, const Array& y) { (void)y; return rsqrt(1.0 - a * a); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Asin>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -0.9, 0.9);
  }
};
CANOPY_REGISTER_PRIMITIVE(Asin);
}  // namespace canopy::prim

namespace canopy {
Array asin(const Array& x) { return bind1<prim::Asin>({detail::to_float(x)}); }
}  // namespace canopy
