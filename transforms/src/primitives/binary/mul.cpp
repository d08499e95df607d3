// The `mul` primitive (x * y): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Mul {
  static constexpr std::string_view name = "mul";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr Lowering lowering = Lowering::binary(kernels::BinaryOp::mul);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kFloat | detail::kInt);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    Array y = x[0] * x[1];
    Array t0 = t[0].valid() ? t[0] * x[1] : Array();
    Array t1 = t[1].valid() ? x[0] * t[1] : Array();
    return {{y}, {detail::add_tangents(t0, t1)}};
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params&) {
    // Bilinear: transposable in whichever operand is the linear one (the other is known).
    if (primals[0].valid() == primals[1].valid())
      detail::raise<UnimplementedRule>(name, "transpose", "", "needs exactly one known operand");
    int i = primals[0].valid() ? 1 : 0;
    Arrays res(2);
    res[static_cast<std::size_t>(i)] = detail::unbroadcast(ct[0] * primals[static_cast<std::size_t>(1 - i)], avals[static_cast<std::size_t>(i)]);
    return res;
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Mul>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kFloat | detail::kInt, -3, 3); }
};
CANOPY_REGISTER_PRIMITIVE(Mul);
}  // namespace canopy::prim

namespace canopy {
Array mul(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "mul");
  if (p[0].dtype() == DType::bool_) return logical_and(p[0], p[1]);  // jnp.multiply on bools
  return bind1<prim::Mul>({p[0], p[1]});
}
}  // namespace canopy
