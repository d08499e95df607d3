// Everything canopy knows about the `div` primitive (x / y, integers toward zero): rules, kernel, samples, op.
#include "../common.hpp"

namespace canopy::prim {
struct Div {
  static constexpr std::string_view name = "div";
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kFloat | detail::kInt);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::eval_binary(kernels::cpu::BinaryOp::div, in, out);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kFloat | detail::kInt, 1, 4); }
};
CANOPY_REGISTER_PRIMITIVE(Div);
}  // namespace canopy::prim

namespace canopy {
Array div(const Array& x, const Array& y) {
  auto p = detail::promote({x, y});
  return bind1<prim::Div>({p[0], p[1]});
}
}  // namespace canopy
