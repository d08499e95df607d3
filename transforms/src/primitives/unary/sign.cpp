// Everything canopy knows about the `sign` primitive (-1, 0 or 1): rules, kernel, samples, op.
#include "../rules.hpp"

namespace canopy::prim {
struct Sign {
  static constexpr std::string_view name = "sign";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::cpu::UnaryOp::sign);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat | detail::kInt);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::eval_unary(kernels::cpu::UnaryOp::sign, in, out);
  }
  static void eval_cuda(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::cuda_unary(kernels::cpu::UnaryOp::sign, in, out);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array>, const Params&) {
    return detail::zero_jvp(x, [&](const Array& a) { return sign(a); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Sign>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    return detail::unary_samples<Params>(detail::kFloat | detail::kInt, -3, 3);
  }
};
CANOPY_REGISTER_PRIMITIVE(Sign);
}  // namespace canopy::prim

namespace canopy {
Array sign(const Array& x) { return bind1<prim::Sign>({x}); }
}  // namespace canopy
