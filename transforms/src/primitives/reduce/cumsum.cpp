// `cumsum` (lax.cumsum: running sums along one axis): rules, samples, op. Linear: its transpose is
// the running sum in the other direction. Its kernels: src/backends/<kind>/reductions.cpp.
#include "cumulative.hpp"

namespace canopy::prim {
struct Cumsum {
  static constexpr std::string_view name = "cumsum";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::CumulativeParams;
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::cumulative_aval(name, avals, params);
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array>, std::span<const Aval>, const Params& params) {
    // y_i = sum_{j <= i} x_j, so x_j's cotangent is sum_{i >= j} ct_i.
    return {cumsum(ct[0], params.axis, !params.reverse)};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_cumulative<Cumsum>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::cumulative_samples<Params>(-3, 3); }
};
CANOPY_REGISTER_PRIMITIVE(Cumsum);
}  // namespace canopy::prim

namespace canopy {
Array cumsum(const Array& x, int axis, bool reverse) { return bind1<prim::Cumsum>({x}, {axis, reverse}); }
}  // namespace canopy
