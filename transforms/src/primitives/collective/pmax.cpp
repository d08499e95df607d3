// `pmax`: the max over the lanes of a named vmap axis. Its one evaluation (`evaluate`) runs on
// every device.
#include "collective.hpp"

namespace canopy::prim {
struct Pmax {
  static constexpr std::string_view name = "pmax";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = CollectiveParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) { return avals[0]; }
  // One evaluation for every device: on a pmap over GPUs, the same meeting combines the operands
  // on the GPUs (collectives_peer.cpp).
  static void evaluate(std::span<const Array> x, std::span<Array> out, const Params& params) {
    out[0] = detail::device_all_reduce(detail::running_axis(name, params.axis_name), x[0],
                                       detail::processes::ReduceOp::max, name);
  }
  static detail::BatchResult collective(std::span<const Array> x, std::span<const int> bdims, std::int64_t,
                                        const Params&) {
    if (bdims[0] < 0) return {{x[0]}, {-1}};  // every lane holds the same value
    return {{reduce_max(x[0], {bdims[0]})}, {-1}};
  }
  // jax's chooser rule across lanes: the tangent averaged over the lanes attaining the extreme.
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    const Array y = pmax(x[0], params.axis_name);
    if (!t[0].valid()) return {{y}, {Array()}};
    const Array at = eq(x[0], y).astype(t[0].dtype());
    return {{y}, {psum(t[0] * at, params.axis_name) / psum(at, params.axis_name)}};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_lanewise<Pmax>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return {}; }  // needs a vmap: tested in vmap_collectives_test
};
CANOPY_REGISTER_PRIMITIVE(Pmax);
}  // namespace canopy::prim

namespace canopy {
Array pmax(const Array& x, const std::string& axis_name) { return bind1<prim::Pmax>({x}, {axis_name}); }
}  // namespace canopy
