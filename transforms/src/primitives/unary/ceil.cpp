// The `ceil` primitive (round up): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Ceil {
  static constexpr std::string_view name = "ceil";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::ceil);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array>, const Params&) {
    return detail::zero_jvp(x, [&](const Array& a) { return ceil(a); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Ceil>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -3, 3);
  }
};
CANOPY_REGISTER_PRIMITIVE(Ceil);
}  // namespace canopy::prim

namespace canopy {
Array ceil(const Array& x) { return is_floating(x.dtype()) ? bind1<prim::Ceil>({x}) : x; }
}  // namespace canopy
