// `argmin` (lax.argmin: index of the smallest element along one axis): rules, samples, op. Shared
// with its twin in argminmax.hpp. Its kernels: src/backends/<kind>/reductions.cpp.
#include "../rules.hpp"
#include "argminmax.hpp"

namespace canopy::prim {
struct ArgMin {
  static constexpr std::string_view name = "argmin";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::ArgParams;
  static constexpr bool nondifferentiable = true;  // integer output
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::arg_aval(name, avals[0], params);
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    Array front = detail::batch_to_front(x[0], bdims[0]);
    const int rank = static_cast<int>(front.ndim()) - 1;
    Params p = params;
    p.axis = (p.axis < 0 ? p.axis + rank : p.axis) + 1;
    return {{bind1<ArgMin>({front}, p)}, {0}};
  }
  static std::vector<Sample<Params>> samples() { return detail::arg_samples<Params>(); }
};
CANOPY_REGISTER_PRIMITIVE(ArgMin);
}  // namespace canopy::prim

namespace canopy {
Array argmin(const Array& x, int axis, DType index_dtype) { return bind1<prim::ArgMin>({x}, {axis, index_dtype}); }
}  // namespace canopy
