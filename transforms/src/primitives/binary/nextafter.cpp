// The `nextafter` primitive (lax.nextafter: the float next to x in the direction of y): rules,
// samples, op. truncated_normal clamps with it. Its kernels: src/backends/<kind>/elementwise.cpp.
#include <cmath>

#include "../rules.hpp"

namespace canopy::prim {
struct Nextafter {
  static constexpr std::string_view name = "nextafter";
  static constexpr Arity arity = Arity::exactly(2);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    const Aval out = detail::binary_aval(name, avals, detail::kFloat);
    if (out.dtype != DType::f32 && out.dtype != DType::f64)
      detail::raise<TypeError>(name, "operands", "", detail::concat(to_string(avals[0]), " are ", out.dtype), "use f32 or f64");
    return out;
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Nextafter>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    auto s = detail::binary_samples<Params>(detail::kFloat, -2, 2);
    std::erase_if(s, [](const auto& x) { return x.inputs[0].dtype() == DType::f16; });  // rejected above
    return s;
  }
};
CANOPY_REGISTER_PRIMITIVE(Nextafter);
}  // namespace canopy::prim

namespace canopy {
Array nextafter(const Array& x, const Array& y) {
  auto p = detail::promote({detail::to_float(x), detail::to_float(y)}, "nextafter");
  return bind1<prim::Nextafter>({p[0], p[1]});
}
}  // namespace canopy
