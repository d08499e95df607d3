// The `pow` primitive (x ** y): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Pow {
  static constexpr std::string_view name = "pow";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr Lowering lowering = Lowering::binary(kernels::BinaryOp::pow);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kFloat | detail::kInt);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    Array y = pow(x[0], x[1]);
    Array t0 = t[0].valid() ? t[0] * x[1] * pow(x[0], x[1] - 1.0) : Array();
    // d/dy x^y = x^y log x, taken as 0 at x == 0 (as jax does) instead of 0 * -inf.
    Array t1 = t[1].valid() ? t[1] * y * log(where(x[0] == 0.0, 1.0, x[0])) : Array();
    return {{y}, {detail::add_tangents(t0, t1)}};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Pow>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kFloat | detail::kInt, 0.5, 3); }
};
CANOPY_REGISTER_PRIMITIVE(Pow);
}  // namespace canopy::prim

namespace canopy {
Array pow(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "pow");
  return bind1<prim::Pow>({p[0], p[1]});
}
}  // namespace canopy
