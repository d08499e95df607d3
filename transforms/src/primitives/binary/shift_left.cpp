// The `shift_left` primitive (lax.shift_left: bits shifted left; amounts outside [0, bits) give 0):
// rules, samples, op. As in XLA, the amount is read as unsigned, so negative amounts are out of
// range too. Its kernels: src/backends/<kind>/elementwise.cpp.
#include "../rules.hpp"

namespace canopy::prim {
struct ShiftLeft {
  static constexpr std::string_view name = "shift_left";
  static constexpr Arity arity = Arity::exactly(2);
  struct Params {};
  static constexpr bool nondifferentiable = true;  // integer outputs
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kInt);
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<ShiftLeft>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kInt, -40, 40); }
};
CANOPY_REGISTER_PRIMITIVE(ShiftLeft);
}  // namespace canopy::prim

namespace canopy {
Array shift_left(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "shift_left");
  return bind1<prim::ShiftLeft>({p[0], p[1]});
}
}  // namespace canopy
