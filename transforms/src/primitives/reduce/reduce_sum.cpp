// Everything canopy knows about `reduce_sum`: rules, kernel, samples, op.
#include "../common.hpp"

namespace canopy::prim {
struct ReduceSum {
  static constexpr std::string_view name = "reduce_sum";
  struct Params {
    std::vector<int> axes;
  };
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::reduce_aval(name, avals[0], params.axes, detail::kFloat | detail::kInt);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params& params) {
    detail::eval_reduce(kernels::cpu::ReduceOp::sum, in, out, params.axes);
  }
  static std::vector<Sample<Params>> samples() { return detail::reduce_samples<Params>(detail::kFloat | detail::kInt); }
};
CANOPY_REGISTER_PRIMITIVE(ReduceSum);
}  // namespace canopy::prim

namespace canopy {
Array reduce_sum(const Array& x, const std::vector<int>& axes) {
  if (axes.empty()) return x;
  return bind1<prim::ReduceSum>({x}, {axes});
}
}  // namespace canopy
