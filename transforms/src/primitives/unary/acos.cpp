// Everything canopy knows about the `acos` primitive (arccosine): rules, kernel, samples, op.
#include "../rules.hpp"

namespace canopy::prim {
struct Acos {
  static constexpr std::string_view name = "acos";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::cpu::UnaryOp::acos);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::eval_unary(kernels::cpu::UnaryOp::acos, in, out);
  }
  static void eval_cuda(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::cuda_unary(kernels::cpu::UnaryOp::acos, in, out);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    return detail::unary_jvp(x, t, [](const Array& a) { return acos(a); },
                             [](const Array& a, const Array& y) { (void)y; return -rsqrt(1.0 - a * a); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Acos>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat, -0.9, 0.9);
  }
};
CANOPY_REGISTER_PRIMITIVE(Acos);
}  // namespace canopy::prim

namespace canopy {
Array acos(const Array& x) { return bind1<prim::Acos>({detail::to_float(x)}); }
}  // namespace canopy
