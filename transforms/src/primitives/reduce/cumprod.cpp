// `cumprod` (lax.cumprod: running products along one axis): rules, samples, op. Its kernels:
// src/backends/<kind>/reductions.cpp.
#include "cumulative.hpp"

namespace canopy::detail {
namespace {
/// x moved `d` places along `axis` towards its end (its start when `reverse`), the vacated places
/// holding `fill`: element i of the result is x[i - d] (x[i + d]).
Array shifted(const Array& x, int axis, std::int64_t d, bool reverse, double fill) {
  std::vector<PadConfig> cfg(x.ndim());
  cfg[static_cast<std::size_t>(axis)] = reverse ? PadConfig{-d, d, 0} : PadConfig{d, -d, 0};
  return pad(x, full({}, fill, x.dtype()), cfg);
}
}  // namespace

/// The tangent of cumprod(x) for x's tangent t: the jvp of the parallel prefix scan of the pairs
/// (x, t) under (p, u) * (q, v) = (p q, u q + p v), as JAX differentiates lax.cumprod (through
/// associative_scan), here in Hillis and Steele's form: log2(n) rounds, each combining every
/// element with the one d places before it. Exact where x has zeros, unlike y * cumsum(t / x).
Array cumprod_tangent(const Array& x, const Array& t, int axis, bool reverse) {
  Array p = x, u = t;
  const std::int64_t n = x.shape()[static_cast<std::size_t>(axis)];
  for (std::int64_t d = 1; d < n; d *= 2) {
    const Array p_before = shifted(p, axis, d, reverse, 1.0), u_before = shifted(u, axis, d, reverse, 0.0);
    u = u_before * p + p_before * u;
    p = p_before * p;
  }
  return u;
}
}  // namespace canopy::detail

namespace canopy::prim {
struct Cumprod {
  static constexpr std::string_view name = "cumprod";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::CumulativeParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::cumulative_aval(name, avals, params);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    const int axis = detail::cumulative_axis(x[0], params);
    return {{cumprod(x[0], params.axis, params.reverse)}, {detail::cumprod_tangent(x[0], t[0], axis, params.reverse)}};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_cumulative<Cumprod>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::cumulative_samples<Params>(-2, 2); }
};
CANOPY_REGISTER_PRIMITIVE(Cumprod);
}  // namespace canopy::prim

namespace canopy {
Array cumprod(const Array& x, int axis, bool reverse) { return bind1<prim::Cumprod>({x}, {axis, reverse}); }
}  // namespace canopy
