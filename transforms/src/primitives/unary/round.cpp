// The `round` primitive (lax.round with a RoundingMethod). Its kernels:
// src/backends/<kind>/elementwise.cpp.
#include "../rules.hpp"
#include "round_params.hpp"

namespace canopy::prim {
struct Round {
  static constexpr std::string_view name = "round";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::RoundParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::unary_aval(name, avals, detail::kFloat);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array>, const Params& params) {
    return detail::zero_jvp(x, [&](const Array& a) { return round(a, params.rounding_method); });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<Round>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    auto s = detail::unary_samples<Params>(detail::kFloat, -3, 3);
    auto e = detail::unary_samples<Params>(detail::kFloat, -3, 3, {RoundingMethod::to_nearest_even});
    s.insert(s.end(), e.begin(), e.end());
    return s;
  }
  static std::string params_string(const Params& params) {
    return params.rounding_method == RoundingMethod::to_nearest_even ? "rounding_method=1" : "rounding_method=0";
  }
};
CANOPY_REGISTER_PRIMITIVE(Round);
}  // namespace canopy::prim

namespace canopy {
Array round(const Array& x, RoundingMethod method) {
  return is_floating(x.dtype()) ? bind1<prim::Round>({x}, {method}) : x;
}
}  // namespace canopy
