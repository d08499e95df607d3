// The `max` primitive (elementwise maximum): rules, samples, op. Its kernels come from its lowering
// on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Max {
  static constexpr std::string_view name = "max";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr Lowering lowering = Lowering::binary(kernels::BinaryOp::max);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kAll);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    // Where x == y the derivative is split evenly between the two (jax's balanced rule).
    Array y = max(x[0], x[1]);
    DType d = y.dtype();
    Array w0 = (x[0] > x[1]).astype(d) + (x[0] == x[1]).astype(d) * 0.5;
    Array t0 = t[0].valid() ? t[0] * w0 : Array();
    Array t1 = t[1].valid() ? t[1] * (1.0 - w0) : Array();
    return {{y}, {detail::add_tangents(t0, t1)}};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Max>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kAll, -3, 3); }
};
CANOPY_REGISTER_PRIMITIVE(Max);
}  // namespace canopy::prim

namespace canopy {
Array max(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "max");
  return bind1<prim::Max>({p[0], p[1]});
}
}  // namespace canopy
