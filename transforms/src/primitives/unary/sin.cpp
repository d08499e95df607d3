// Everything canopy knows about the `sin` primitive (sine): rules, kernel, samples, op.
#include "../common.hpp"

namespace canopy::prim {
struct Sin {
  static constexpr std::string_view name = "sin";
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::eval_unary(kernels::cpu::UnaryOp::sin, in, out);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -4, 4);
  }
};
CANOPY_REGISTER_PRIMITIVE(Sin);
}  // namespace canopy::prim

namespace canopy {
Array sin(const Array& x) { return bind1<prim::Sin>({detail::to_float(x)}); }
}  // namespace canopy
