// The `rem` primitive (remainder with the sign of x): rules, samples, op. Its kernels come from its
// lowering on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Rem {
  static constexpr std::string_view name = "rem";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr Lowering lowering = Lowering::binary(kernels::BinaryOp::rem);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kFloat | detail::kInt);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    // x - y * trunc(x / y): d/dx = 1, d/dy = -trunc(x / y).
    Array y = rem(x[0], x[1]);
    Array t0 = t[0].valid() ? broadcast_to(t[0], y.shape()) : Array();
    Array q = div(x[0], x[1]);
    Array t1 = t[1].valid() ? -(t[1] * sign(q) * floor(abs(q))) : Array();
    return {{y}, {detail::add_tangents(t0, t1)}};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Rem>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kFloat | detail::kInt, 1, 5); }
};
CANOPY_REGISTER_PRIMITIVE(Rem);
}  // namespace canopy::prim

namespace canopy {
Array rem(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "rem");
  return bind1<prim::Rem>({p[0], p[1]});
}
}  // namespace canopy
