// Everything canopy knows about `reduce_max`: rules, kernel, samples, op.
#include "../common.hpp"

namespace canopy::prim {
struct ReduceMax {
  static constexpr std::string_view name = "reduce_max";
  struct Params {
    std::vector<int> axes;
  };
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::reduce_aval(name, avals[0], params.axes, detail::kAll);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params& params) {
    detail::eval_reduce(kernels::cpu::ReduceOp::max, in, out, params.axes);
  }
  static std::vector<Sample<Params>> samples() { return detail::reduce_samples<Params>(detail::kAll); }
};
CANOPY_REGISTER_PRIMITIVE(ReduceMax);
}  // namespace canopy::prim

namespace canopy {
Array reduce_max(const Array& x, const std::vector<int>& axes) {
  if (axes.empty()) return x;
  return bind1<prim::ReduceMax>({x}, {axes});
}
}  // namespace canopy
