// `select_and_scatter_add` (XLA's, the transpose of select_and_gather_add, as jax's max pooling
// gradient uses it): a zero array of the operand x's shape with each window's source value added at
// x's first maximal element of that window. Linear in the source; x only selects. Rules, kernel,
// samples, op. Its kernels: src/backends/<kind>/nn.cpp.
#include "../rules.hpp"
#include "geometry.hpp"

namespace canopy::prim {
struct SelectAndScatterAdd {
  static constexpr std::string_view name = "select_and_scatter_add";
  static constexpr Arity arity = Arity::exactly(2);
  using Params = detail::WindowParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Aval &s = avals[0], &x = avals[1];
    const Aval windows = detail::window_aval(name, x, params, detail::kFloat);
    if (s.dtype != x.dtype || !(s.shape == windows.shape))
      detail::raise<TypeError>(name, "source", "argument 0",
                               detail::concat(to_string(s), " must have the operand's dtype and the windows' shape ",
                                              to_string(windows)));
    return {x.dtype, x.shape, s.weak_type};
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    const Array y = detail::select_and_scatter_add(x[0], x[1], params);
    return {{y}, {t[0].valid() ? detail::select_and_scatter_add(t[0], x[1], params) : Array()}};
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval>,
                          const Params& params) {
    if (primals[0].valid()) detail::raise<UnimplementedRule>(name, "transpose", "", "is linear in the source only");
    return {detail::select_and_gather_add(ct[0], primals[1], params), Array()};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    const Arrays front = detail::batched_at_front(x, bdims);
    return {{detail::select_and_scatter_add(front[0], front[1], detail::with_leading_unit_dim(params))}, {0}};
  }
  static std::vector<Sample<Params>> samples() { return detail::select_samples<Params>(true); }
};
CANOPY_REGISTER_PRIMITIVE(SelectAndScatterAdd);
}  // namespace canopy::prim

namespace canopy::detail {
Array select_and_scatter_add(const Array& source, const Array& operand, const WindowParams& params) {
  return bind1<prim::SelectAndScatterAdd>({source, operand}, params);
}
}  // namespace canopy::detail
