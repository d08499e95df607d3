// The `div` primitive (x / y, integers toward zero): rules, samples, op. Its kernels come from its
// lowering on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Div {
  static constexpr std::string_view name = "div";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr Lowering lowering = Lowering::binary(kernels::BinaryOp::div);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kFloat | detail::kInt);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    Array y = div(x[0], x[1]);
    Array t0 = t[0].valid() ? div(t[0], x[1]) : Array();
    Array t1 = t[1].valid() ? -div(t[1] * y, x[1]) : Array();
    return {{y}, {detail::add_tangents(t0, t1)}};
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params&) {
    // Linear in the numerator only.
    if (!primals[1].valid())
      detail::raise<UnimplementedRule>(name, "transpose", "", "the divisor is not linear");
    return {detail::unbroadcast(div(ct[0], primals[1]), avals[0]), Array()};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Div>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kFloat | detail::kInt, 1, 4); }
};
CANOPY_REGISTER_PRIMITIVE(Div);
}  // namespace canopy::prim

namespace canopy {
Array div(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "div");
  return bind1<prim::Div>({p[0], p[1]});
}
}  // namespace canopy
