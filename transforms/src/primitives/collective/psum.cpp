// `psum`: the sum over the lanes of a named vmap axis. Its one evaluation (`evaluate`) runs on
// every device.
#include "collective.hpp"

namespace canopy::prim {
struct Psum {
  static constexpr std::string_view name = "psum";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = CollectiveParams;
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) { return avals[0]; }
  // One evaluation for every device: on a pmap over GPUs, the same meeting combines the operands
  // on the GPUs (collectives_peer.cpp).
  static void evaluate(std::span<const Array> x, std::span<Array> out, const Params& params) {
    out[0] = detail::device_all_reduce(detail::running_axis(name, params.axis_name), x[0],
                                       detail::processes::ReduceOp::sum, name);
  }
  static detail::BatchResult collective(std::span<const Array> x, std::span<const int> bdims, std::int64_t n,
                                        const Params&) {
    if (bdims[0] < 0) return {{x[0] * static_cast<double>(n)}, {-1}};  // every lane holds the same value
    return {{reduce_sum(x[0], {bdims[0]})}, {-1}};
  }
  // Each lane's result is the sum of all lanes, so each lane's cotangent is the sum of all of them.
  static Arrays transpose(std::span<const Array> ct, std::span<const Array>, std::span<const Aval>, const Params& params) {
    return {psum(ct[0], params.axis_name)};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_lanewise<Psum>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return {}; }  // needs a vmap: tested in vmap_collectives_test
};
CANOPY_REGISTER_PRIMITIVE(Psum);
}  // namespace canopy::prim

namespace canopy {
Array psum(const Array& x, const std::string& axis_name) { return bind1<prim::Psum>({x}, {axis_name}); }
Array pmean(const Array& x, const std::string& axis_name) {
  Array xf = detail::to_float(x);
  // The axis size is known where the axis is bound (jax divides by psum(1), a constant too).
  const std::int64_t n = detail::bound_axis_size(axis_name);
  if (n > 0) return psum(xf, axis_name) / static_cast<double>(n);
  return psum(xf, axis_name) / psum(ones({}, xf.dtype()), axis_name);
}
}  // namespace canopy
