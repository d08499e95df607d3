// Everything canopy knows about the `max` primitive (elementwise maximum): rules, kernel, samples, op.
#include "../common.hpp"

namespace canopy::prim {
struct Max {
  static constexpr std::string_view name = "max";
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kAll);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::eval_binary(kernels::cpu::BinaryOp::max, in, out);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kAll, -3, 3); }
};
CANOPY_REGISTER_PRIMITIVE(Max);
}  // namespace canopy::prim

namespace canopy {
Array max(const Array& x, const Array& y) {
  auto p = detail::promote({x, y});
  return bind1<prim::Max>({p[0], p[1]});
}
}  // namespace canopy
