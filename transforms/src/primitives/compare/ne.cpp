// The `ne` primitive (x != y): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Ne {
  static constexpr std::string_view name = "ne";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr Lowering lowering = Lowering::binary(kernels::BinaryOp::ne);
  struct Params {};
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kAll, true);
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Ne>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kAll, -2, 2); }
};
CANOPY_REGISTER_PRIMITIVE(Ne);
}  // namespace canopy::prim

namespace canopy {
Array ne(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "ne");
  return bind1<prim::Ne>({p[0], p[1]});
}
}  // namespace canopy
