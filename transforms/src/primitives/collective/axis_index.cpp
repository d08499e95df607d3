// Everything canopy knows about `axis_index`: each lane's position along a named vmap axis.
#include "collective.hpp"

namespace canopy::prim {
struct AxisIndex {
  static constexpr std::string_view name = "axis_index";
  static constexpr Arity arity = Arity::exactly(0);
  using Params = CollectiveParams;
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval>, const Params&) { return {DType::i32, {}, false}; }
  static void eval_cpu(std::span<const Array>, std::span<Array> out, const Params& params) {
    *static_cast<std::int32_t*>(detail::mutable_data(out[0])) = detail::running_axis(name, params.axis_name).index;
  }
  // On a pmap over GPUs (its device threads make operand-less values on their GPU).
  static void eval_cuda(std::span<const Array>, std::span<Array> out, const Params& params) {
    const std::int32_t index = detail::running_axis(name, params.axis_name).index;
    kernels::cuda::fill(sizeof index, &index, detail::mutable_data(out[0]), 1, detail::gpu_of(out[0]));
  }
  static detail::BatchResult collective(std::span<const Array>, std::span<const int>, std::int64_t n, const Params&) {
    return {{iota(DType::i32, {n})}, {0}};
  }
  static std::vector<Sample<Params>> samples() { return {}; }  // needs a vmap: tested in vmap_collectives_test
};
CANOPY_REGISTER_PRIMITIVE(AxisIndex);
}  // namespace canopy::prim

namespace canopy {
Array axis_index(const std::string& axis_name) {
  return bind<prim::AxisIndex>(std::span<const Array>(), {axis_name})[0];
}
}  // namespace canopy
