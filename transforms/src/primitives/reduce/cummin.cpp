// `cummin` (lax.cummin: running minima along one axis): rules, samples, op. Its jvp is cummax's and
// cummin's shared rule (cumulative.hpp). Its kernels: src/backends/<kind>/reductions.cpp.
#include "cumulative.hpp"

namespace canopy::prim {
struct Cummin {
  static constexpr std::string_view name = "cummin";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::CumulativeParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::cumulative_aval(name, avals, params);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    return detail::cumulative_extreme_jvp(x, t, params, [](const Array& a, int axis, bool reverse) {
      return cummin(a, axis, reverse);
    });
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_cumulative<Cummin>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::cumulative_samples<Params>(-3, 3); }
};
CANOPY_REGISTER_PRIMITIVE(Cummin);
}  // namespace canopy::prim

namespace canopy {
Array cummin(const Array& x, int axis, bool reverse) { return bind1<prim::Cummin>({x}, {axis, reverse}); }
}  // namespace canopy
