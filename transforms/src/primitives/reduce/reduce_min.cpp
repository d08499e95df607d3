// `reduce_min`: rules, samples, op. Its kernels: src/backends/<kind>/reductions.cpp.
#include "../rules.hpp"

namespace canopy::prim {
struct ReduceMin {
  static constexpr std::string_view name = "reduce_min";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::ReduceParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::reduce_aval(name, avals[0], params.axes, detail::kAll);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    // jax's reduce-chooser rule: the tangent is averaged over the positions attaining the extreme.
    Array y = reduce_min(x[0], params.axes);
    std::vector<int> kept;
    for (int d = 0; d < static_cast<int>(x[0].ndim()); ++d) {
      bool reduced = false;
      for (int a : params.axes) reduced |= (a < 0 ? a + static_cast<int>(x[0].ndim()) : a) == d;
      if (!reduced) kept.push_back(d);
    }
    Array at = (x[0] == broadcast_in_dim(y, x[0].shape(), kept)).astype(y.dtype());
    return {{y}, {reduce_sum(t[0] * at, params.axes) / reduce_sum(at, params.axes)}};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return {{reduce_min(detail::batch_to_front(x[0], bdims[0]), detail::shift_axes(params.axes, x[0].ndim() - 1))}, {0}};
  }
  static std::vector<Sample<Params>> samples() { return detail::reduce_samples<Params>(detail::kAll); }
};
CANOPY_REGISTER_PRIMITIVE(ReduceMin);
}  // namespace canopy::prim

namespace canopy {
Array reduce_min(const Array& x, const std::vector<int>& axes) {
  if (axes.empty()) return x;
  return bind1<prim::ReduceMin>({x}, {axes});
}
}  // namespace canopy
