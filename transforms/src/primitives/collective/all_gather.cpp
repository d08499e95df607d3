// `all_gather`: every lane receives the stack of all lanes' values. Its one evaluation (`evaluate`)
// runs on every device.
#include "collective.hpp"

namespace canopy::prim {
struct AllGather {
  static constexpr std::string_view name = "all_gather";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = CollectiveParams;
  static constexpr bool linear = true;
  // The stack's size is the bound axis's (its shape is needed when linearize records a tangent).
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const std::int64_t n = detail::bound_axis_size(params.axis_name);
    if (n < 0) detail::raise_unbound_axis(name, params.axis_name);
    Aval out = avals[0];
    auto dims = out.shape.vec();
    dims.insert(dims.begin(), n);
    out.shape = Shape(dims);
    return out;
  }
  // One evaluation for every device: on a pmap over GPUs, the same meeting combines the operands
  // on the GPUs (collectives_peer.cpp).
  static void evaluate(std::span<const Array> x, std::span<Array> out, const Params& params) {
    out[0] = detail::device_all_gather(detail::running_axis(name, params.axis_name), x[0], name);
  }
  static detail::BatchResult collective(std::span<const Array> x, std::span<const int> bdims, std::int64_t n,
                                        const Params&) {
    if (bdims[0] >= 0) return {{detail::move_axis(x[0], bdims[0], 0)}, {-1}};
    auto dims = x[0].shape().vec();
    dims.insert(dims.begin(), n);
    std::vector<int> keep;
    for (std::size_t d = 0; d < x[0].ndim(); ++d) keep.push_back(static_cast<int>(d + 1));
    return {{broadcast_in_dim(x[0], Shape(dims), keep)}, {-1}};
  }
  // Lane i's value went to row i of every lane's result: its cotangent is row i of the sum of
  // the lanes' cotangents (jax's psum_scatter).
  static Arrays transpose(std::span<const Array> ct, std::span<const Array>, std::span<const Aval>, const Params& params) {
    return {take(psum(ct[0], params.axis_name), axis_index(params.axis_name), 0)};
  }
  // Gathering over another axis adds its axis in front, one place before this batch axis.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return {bind<AllGather>(x, params), {bdims[0] + 1}};
  }
  static std::vector<Sample<Params>> samples() { return {}; }  // needs a vmap: tested in vmap_collectives_test
};
CANOPY_REGISTER_PRIMITIVE(AllGather);
}  // namespace canopy::prim

namespace canopy {
Array all_gather(const Array& x, const std::string& axis_name) { return bind1<prim::AllGather>({x}, {axis_name}); }
}  // namespace canopy
