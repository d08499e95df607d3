// The `atan2` primitive (atan(x / y) with quadrant): rules, samples, op. Its kernels come from its
// lowering on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Atan2 {
  static constexpr std::string_view name = "atan2";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr Lowering lowering = Lowering::binary(kernels::BinaryOp::atan2);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    Array y = atan2(x[0], x[1]);
    Array denom = x[0] * x[0] + x[1] * x[1];
    Array t0 = t[0].valid() ? t[0] * x[1] / denom : Array();
    Array t1 = t[1].valid() ? -(t[1] * x[0] / denom) : Array();
    return {{y}, {detail::add_tangents(t0, t1)}};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Atan2>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kFloat, -3, 3); }
};
CANOPY_REGISTER_PRIMITIVE(Atan2);
}  // namespace canopy::prim

namespace canopy {
Array atan2(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "atan2");
  return bind1<prim::Atan2>({detail::to_float(p[0]), detail::to_float(p[1])});
}
}  // namespace canopy
