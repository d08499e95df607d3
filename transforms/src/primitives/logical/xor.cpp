// The `xor` primitive (logical/bitwise xor): rules, samples, op. Its kernels come from its lowering
// on every backend.
#include "../rules.hpp"

namespace canopy::prim {
struct Xor {
  static constexpr std::string_view name = "xor";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr Lowering lowering = Lowering::binary(kernels::BinaryOp::logical_xor);
  struct Params {};
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kInt | detail::kBool);
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Xor>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kInt | detail::kBool, 0, 100); }
};
CANOPY_REGISTER_PRIMITIVE(Xor);
}  // namespace canopy::prim

namespace canopy {
Array bitwise_xor(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "xor");
  return bind1<prim::Xor>({p[0], p[1]});
}
}  // namespace canopy
