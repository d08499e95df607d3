// jnp statistics composed from the reduction primitives: logsumexp (max-shifted), var and std.
#include "../primitives/common.hpp"

namespace canopy {
namespace {

std::vector<int> resolve_axes(const char* api, const Array& x, const Axes& axes) {
  std::vector<int> r;
  if (!axes) {
    for (int i = 0; i < static_cast<int>(x.ndim()); ++i) r.push_back(i);
    return r;
  }
  std::vector<bool> seen(x.ndim(), false);
  for (int a : *axes) {
    int n = detail::normalize_axis(api, a, x.ndim(), x.aval());
    if (seen[static_cast<std::size_t>(n)])
      detail::raise<ShapeError>(api, "axes", std::to_string(a), detail::concat("repeats an axis of ", to_string(x.aval())));
    seen[static_cast<std::size_t>(n)] = true;
    r.push_back(n);
  }
  return r;
}

Shape kept_shape(const Array& x, const std::vector<int>& axes) {
  Shape s = x.shape();
  for (int a : axes) s[static_cast<std::size_t>(a)] = 1;
  return s;
}

}  // namespace

Array logsumexp(const Array& x, const Axes& axes, bool keepdims) {
  Array xf = detail::to_float(x);
  auto ax = resolve_axes("logsumexp", xf, axes);
  Shape keep = kept_shape(xf, ax);
  // reduce_max (not jnp max) so an empty reduction yields -inf rather than an error, as in JAX.
  Array mr = reduce_max(xf, ax), m = reshape(mr, keep);
  // An infinite max (all -inf, or +inf present) shifts by 0 so -inf stays -inf and +inf stays +inf.
  Array shift = where(is_finite(m), m, 0.0);
  Array out = log(reduce_sum(exp(xf - shift), ax)) + reshape(shift, mr.shape());
  return keepdims ? reshape(out, keep) : out;
}

Array var(const Array& x, const Axes& axes, int ddof, bool keepdims) {
  Array xf = detail::to_float(x);
  auto ax = resolve_axes("var", xf, axes);
  std::int64_t count = 1;
  for (int a : ax) count *= xf.shape()[static_cast<std::size_t>(a)];
  Array centered = xf - mean(xf, Axes{ax}, true);
  Array out = reduce_sum(centered * centered, ax) / static_cast<double>(std::max<std::int64_t>(count - ddof, 0));
  return keepdims ? reshape(out, kept_shape(xf, ax)) : out;
}

Array std(const Array& x, const Axes& axes, int ddof, bool keepdims) { return sqrt(var(x, axes, ddof, keepdims)); }

}  // namespace canopy
