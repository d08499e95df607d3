// Everything canopy knows about `all_gather`: every lane receives the stack of all lanes' values.
#include "collective.hpp"

namespace canopy::prim {
struct AllGather {
  static constexpr std::string_view name = "all_gather";
  using Params = CollectiveParams;
  static Aval abstract_eval(std::span<const Aval>, const Params& params) { detail::raise_unbound_axis(name, params); }
  static void eval_cpu(std::span<const Array>, std::span<Array>, const Params& params) {
    detail::raise_unbound_axis(name, params);
  }
  // Not differentiable yet: its output shape depends on the axis size, which linearize does not see.
  static detail::BatchResult collective(std::span<const Array> x, std::span<const int> bdims, std::int64_t n,
                                        const Params&) {
    if (bdims[0] >= 0) return {{detail::move_axis(x[0], bdims[0], 0)}, {-1}};
    auto dims = x[0].shape().vec();
    dims.insert(dims.begin(), n);
    std::vector<int> keep;
    for (std::size_t d = 0; d < x[0].ndim(); ++d) keep.push_back(static_cast<int>(d + 1));
    return {{broadcast_in_dim(x[0], Shape(dims), keep)}, {-1}};
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
