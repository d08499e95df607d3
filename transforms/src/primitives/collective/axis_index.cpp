// `axis_index`: each lane's position along a named vmap axis. Its one evaluation (`evaluate`) runs
// on every device.
#include "collective.hpp"

namespace canopy::prim {
struct AxisIndex {
  static constexpr std::string_view name = "axis_index";
  static constexpr Arity arity = Arity::exactly(0);
  using Params = CollectiveParams;
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval>, const Params&) { return {DType::i32, {}, false}; }
  // One evaluation for every device: the index is written into out's memory (on a pmap over
  // GPUs, its device threads make operand-less values on their GPU).
  static void evaluate(std::span<const Array>, std::span<Array> out, const Params& params) {
    const std::int32_t index = detail::running_axis(name, params.axis_name).index;
    detail::fill(out[0], sizeof index, &index, 1);
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
