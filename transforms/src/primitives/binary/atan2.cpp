// Everything canopy knows about the `atan2` primitive (atan(x / y) with quadrant): rules, kernel, samples, op.
#include "../common.hpp"

namespace canopy::prim {
struct Atan2 {
  static constexpr std::string_view name = "atan2";
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kFloat);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::eval_binary(kernels::cpu::BinaryOp::atan2, in, out);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kFloat, -3, 3); }
};
CANOPY_REGISTER_PRIMITIVE(Atan2);
}  // namespace canopy::prim

namespace canopy {
Array atan2(const Array& x, const Array& y) {
  auto p = detail::promote({x, y});
  return bind1<prim::Atan2>({detail::to_float(p[0]), detail::to_float(p[1])});
}
}  // namespace canopy
