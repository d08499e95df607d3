// Everything canopy knows about the `tan` primitive (tangent): rules, kernel, samples, op.
#include "../common.hpp"

namespace canopy::prim {
struct Tan {
  static constexpr std::string_view name = "tan";
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::eval_unary(kernels::cpu::UnaryOp::tan, in, out);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -1.5, 1.5);
  }
};
CANOPY_REGISTER_PRIMITIVE(Tan);
}  // namespace canopy::prim

namespace canopy {
Array tan(const Array& x) { return bind1<prim::Tan>({detail::to_float(x)}); }
}  // namespace canopy
