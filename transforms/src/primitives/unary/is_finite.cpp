// The `is_finite` primitive (bool: neither inf nor NaN). Its kernels come from its lowering on
// every backend.
#include <cmath>

#include "../rules.hpp"

namespace canopy::prim {
struct IsFinite {
  static constexpr std::string_view name = "is_finite";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::unary(kernels::UnaryOp::is_finite);
  struct Params {};
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat, /*bool_out=*/true);
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<IsFinite>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    auto s = detail::unary_samples<Params>(detail::kFloat, -3, 3);
    s.push_back({{array({1.f, INFINITY, -INFINITY, NAN})}, {}, "f32 specials"});
    return s;
  }
};
CANOPY_REGISTER_PRIMITIVE(IsFinite);
}  // namespace canopy::prim

namespace canopy {
// jnp.isfinite on integers and booleans is all true.
Array is_finite(const Array& x) {
  return is_floating(x.dtype()) ? bind1<prim::IsFinite>({x}) : full(x.shape(), 1, DType::bool_);
}
}  // namespace canopy
