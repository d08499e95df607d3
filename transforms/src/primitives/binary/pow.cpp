// Everything canopy knows about the `pow` primitive (x ** y): rules, kernel, samples, op.
#include "../common.hpp"

namespace canopy::prim {
struct Pow {
  static constexpr std::string_view name = "pow";
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kFloat | detail::kInt);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::eval_binary(kernels::cpu::BinaryOp::pow, in, out);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kFloat | detail::kInt, 0.5, 3); }
};
CANOPY_REGISTER_PRIMITIVE(Pow);
}  // namespace canopy::prim

namespace canopy {
Array pow(const Array& x, const Array& y) {
  auto p = detail::promote({x, y});
  return bind1<prim::Pow>({p[0], p[1]});
}
}  // namespace canopy
