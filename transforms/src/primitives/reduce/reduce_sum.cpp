// `reduce_sum`: rules, samples, op. Its kernels: src/backends/<kind>/reductions.cpp.
#include "../rules.hpp"

namespace canopy::prim {
struct ReduceSum {
  static constexpr std::string_view name = "reduce_sum";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::ReduceParams;
  static constexpr bool linear = true;
  // jit's elementwise fusion may fold the sum into the kernel that computes its operand.
  static constexpr Lowering lowering = Lowering::reduction(kernels::ReduceOp::sum);
  static std::vector<int> reduction_axes(const Params& params) { return params.axes; }
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::reduce_aval(name, avals[0], params.axes, detail::kFloat | detail::kInt);
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    (void)primals;
    std::vector<int> kept;  // the operand dims that survive the reduction, in order
    for (int d = 0; d < static_cast<int>(avals[0].ndim()); ++d) {
      bool reduced = false;
      for (int a : params.axes) reduced |= (a < 0 ? a + static_cast<int>(avals[0].ndim()) : a) == d;
      if (!reduced) kept.push_back(d);
    }
    return {broadcast_in_dim(ct[0], avals[0].shape, kept)};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return {{reduce_sum(detail::batch_to_front(x[0], bdims[0]), detail::shift_axes(params.axes, x[0].ndim() - 1))}, {0}};
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
