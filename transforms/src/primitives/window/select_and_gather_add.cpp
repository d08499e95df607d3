// `select_and_gather_add` (XLA's, as jax's max pooling derivative uses it): for each window of the
// operand x, the tangent t at x's first maximal element (0 when that maximum is padding or a NaN).
// Linear in t; x only selects. Rules, samples, op. Its kernels: src/backends/<kind>/nn.cpp.
#include "../rules.hpp"
#include "geometry.hpp"

namespace canopy::prim {
struct SelectAndGatherAdd {
  static constexpr std::string_view name = "select_and_gather_add";
  static constexpr Arity arity = Arity::exactly(2);
  using Params = detail::WindowParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Aval &t = avals[0], &x = avals[1];
    if (t.dtype != x.dtype || !(t.shape == x.shape))
      detail::raise<TypeError>(name, "tangent", "argument 0",
                               detail::concat(to_string(t), " must have the operand's shape and dtype ", to_string(x)));
    Aval out = detail::window_aval(name, x, params, detail::kFloat);
    out.weak_type = t.weak_type;
    return out;
  }
  // Linear in the tangent; the selection is piecewise constant in x, which contributes nothing.
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    const Array y = detail::select_and_gather_add(x[0], x[1], params);
    return {{y}, {t[0].valid() ? detail::select_and_gather_add(t[0], x[1], params) : Array()}};
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval>,
                          const Params& params) {
    if (primals[0].valid()) detail::raise<UnimplementedRule>(name, "transpose", "", "is linear in the tangent only");
    return {detail::select_and_scatter_add(ct[0], primals[1], params), Array()};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    const Arrays front = detail::batched_at_front(x, bdims);
    return {{detail::select_and_gather_add(front[0], front[1], detail::with_leading_unit_dim(params))}, {0}};
  }
  static std::vector<Sample<Params>> samples() { return detail::select_samples<Params>(false); }
};
CANOPY_REGISTER_PRIMITIVE(SelectAndGatherAdd);
}  // namespace canopy::prim

namespace canopy::detail {
Array select_and_gather_add(const Array& tangent, const Array& operand, const WindowParams& params) {
  return bind1<prim::SelectAndGatherAdd>({tangent, operand}, params);
}
}  // namespace canopy::detail
