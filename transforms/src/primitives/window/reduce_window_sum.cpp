// `reduce_window_sum` (lax.reduce_window with lax.add): the sum of each window (padding counts as
// 0); rules, samples, op. Its kernels: src/backends/<kind>/nn.cpp.
#include "../rules.hpp"
#include "geometry.hpp"

namespace canopy::prim {
struct ReduceWindowSum {
  static constexpr std::string_view name = "reduce_window_sum";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::WindowParams;
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::window_aval(name, avals[0], params, detail::kFloat | detail::kInt);
  }
  // jax's _reduce_window_sum_transpose_rule: every input element receives the cotangents of the
  // windows it lies in, i.e. a window sum (stride 1) over the cotangent spread out by the strides
  // and padded by the window (conv's lhs-transpose padding).
  static Arrays transpose(std::span<const Array> ct, std::span<const Array>, std::span<const Aval> avals, const Params& p) {
    const Aval& x = avals[0];
    const Array& g = ct[0];
    std::vector<PadConfig> config;
    Params q;
    for (std::size_t d = 0; d < x.ndim(); ++d) {
      const auto [lo, hi] = detail::transpose_padding(detail::dilated_size(x.shape[d], p.base_dilation[d]),
                                                      detail::dilated_size(p.window_dimensions[d], p.window_dilation[d]),
                                                      detail::dilated_size(g.shape()[d], p.window_strides[d]),
                                                      p.padding[d].first);
      config.push_back({lo, hi, p.window_strides[d] - 1});
    }
    q.window_dimensions = p.window_dimensions;
    q.window_strides = p.base_dilation;
    q.padding.assign(x.ndim(), {0, 0});
    q.base_dilation.assign(x.ndim(), 1);
    q.window_dilation = p.window_dilation;
    return {bind1<ReduceWindowSum>({pad(g, zeros({}, g.dtype()), config)}, q)};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return {{bind1<ReduceWindowSum>({detail::batch_to_front(x[0], bdims[0])}, detail::with_leading_unit_dim(params))}, {0}};
  }
  static std::vector<Sample<Params>> samples() { return detail::window_samples<Params>(true); }
};
CANOPY_REGISTER_PRIMITIVE(ReduceWindowSum);
}  // namespace canopy::prim

namespace canopy {
Array reduce_window_sum(const Array& x, const std::vector<std::int64_t>& window_dimensions,
                        const std::vector<std::int64_t>& window_strides, const Padding& padding,
                        const std::vector<std::int64_t>& base_dilation, const std::vector<std::int64_t>& window_dilation) {
  constexpr std::string_view api = "reduce_window_sum";
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
  return bind1<prim::ReduceWindowSum>({x}, p);
}
}  // namespace canopy
