// `reduce_window_max` (lax.reduce_window with lax.max): the maximum of each window (padding counts
// as -inf); rules, samples, op. Its kernels: src/backends/<kind>/nn.cpp.
#include "../rules.hpp"
#include "geometry.hpp"

namespace canopy::prim {
struct ReduceWindowMax {
  static constexpr std::string_view name = "reduce_window_max";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::WindowParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::window_aval(name, avals[0], params, detail::kFloat | detail::kInt);
  }
  // jax's chooser rule: each window's tangent is the tangent at its maximum, the first one in
  // window order on ties (select_and_gather_add, whose transpose scatters a cotangent there).
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& p) {
    const Array y = bind1<ReduceWindowMax>({x[0]}, p);
    if (!t[0].valid()) return {{y}, {Array()}};
    return {{y}, {detail::select_and_gather_add(t[0], x[0], p)}};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return {{bind1<ReduceWindowMax>({detail::batch_to_front(x[0], bdims[0])}, detail::with_leading_unit_dim(params))}, {0}};
  }
  static std::vector<Sample<Params>> samples() { return detail::window_samples<Params>(true); }
};
CANOPY_REGISTER_PRIMITIVE(ReduceWindowMax);
}  // namespace canopy::prim

namespace canopy {
Array reduce_window_max(const Array& x, const std::vector<std::int64_t>& window_dimensions,
                        const std::vector<std::int64_t>& window_strides, const Padding& padding,
                        const std::vector<std::int64_t>& base_dilation, const std::vector<std::int64_t>& window_dilation) {
  constexpr std::string_view api = "reduce_window_max";
  const std::size_t r = x.ndim();
  detail::WindowParams p{window_dimensions, detail::ones_or(api, "window_strides", window_strides, r), {},
                         detail::ones_or(api, "base_dilation", base_dilation, r),
                         detail::ones_or(api, "window_dilation", window_dilation, r)};
  if (window_dimensions.size() != r)
    detail::raise<ShapeError>(api, "window_dimensions", detail::list_text(window_dimensions),
                              detail::concat("must have one entry per dimension of ", to_string(x.aval())));
  std::vector<std::int64_t> win;
  for (std::size_t d = 0; d < r; ++d)
    win.push_back(detail::checked_dilated_size(api, "window", d, window_dimensions[d], p.window_dilation[d]));
  p.padding = detail::resolve_padding(api, padding, x.shape(), win, p.window_strides);
  return bind1<prim::ReduceWindowMax>({x}, p);
}
}  // namespace canopy
