// jax.nn's activation functions and the several-axes softmax, composed from primitive ops
// with the formulas jax.nn uses (so results and, later, gradients agree with JAX's).
#include <cmath>

#include "../primitives/common.hpp"
#include "canopy/nn.hpp"
#include "canopy/transforms/custom.hpp"

namespace canopy::nn {

// jax.nn.relu's custom derivative: 0 at x == 0 (maximum's own rule would split the tie, 0.5),
// so a unit stuck at zero gets no gradient, as in JAX.
Array relu(const Array& x) {
  static auto f = custom_jvp([](const Array& v) { return maximum(v, 0); },
                             [](const auto& primals, const auto& tangents) {
                               const Array& v = std::get<0>(primals);
                               const Array& t = std::get<0>(tangents);
                               return std::make_pair(maximum(v, 0), where(v > 0, t, zeros_like(t)));
                             });
  return f(x);
}

Array gelu(const Array& x, bool approximate) {
  Array xf = detail::to_float(x);
  if (approximate) {
    const double k = std::sqrt(2.0 / M_PI);
    return xf * (0.5 * (1.0 + tanh(k * (xf + 0.044715 * (xf * xf * xf)))));
  }
  return xf * (erf(xf * (1.0 / std::sqrt(2.0))) + 1.0) * 0.5;
}

Array silu(const Array& x) {
  Array xf = detail::to_float(x);
  return xf * logistic(xf);
}

// logaddexp(x, 0) = max(x, 0) + log1p(exp(-|x|)): exact at +-inf, NaN propagates through max.
// Its derivative is given as jax's logaddexp gives it, logistic(x): differentiating the formula
// would meet max's and abs's kinks at 0 and give 0 there instead of 1/2.
Array softplus(const Array& x) {
  static auto f = custom_jvp([](const Array& v) { return maximum(v, 0) + log1p(exp(-abs(v))); },
                                   [](const auto& primals, const auto& tangents) {
                                     const Array& v = std::get<0>(primals);
                                     return std::make_pair(maximum(v, 0) + log1p(exp(-abs(v))), std::get<0>(tangents) * logistic(v));
                                   });
  return f(detail::to_float(x));
}

namespace {

// x - max over `axes` (kept), the shared first step of both softmaxes.
Array shifted(const char* api, const Array& x, const std::vector<int>& axes, std::vector<int>& norm) {
  for (int a : axes) norm.push_back(detail::normalize_axis(api, a, x.ndim(), x.aval()));
  Shape keep = x.shape();
  for (int a : norm) keep[static_cast<std::size_t>(a)] = 1;
  return x - reshape(reduce_max(x, norm), keep);
}

Shape kept(const Array& x, const std::vector<int>& axes) {
  Shape keep = x.shape();
  for (int a : axes) keep[static_cast<std::size_t>(a)] = 1;
  return keep;
}

}  // namespace

Array softmax(const Array& x, const std::vector<int>& axes) {
  if (axes.size() == 1) return softmax(x, axes[0]);
  Array xf = detail::to_float(x);
  std::vector<int> ax;
  Array e = exp(shifted("softmax", xf, axes, ax));
  return e / reshape(reduce_sum(e, ax), kept(xf, ax));
}

Array log_softmax(const Array& x, const std::vector<int>& axes) {
  if (axes.size() == 1) return log_softmax(x, axes[0]);
  Array xf = detail::to_float(x);
  std::vector<int> ax;
  Array s = shifted("log_softmax", xf, axes, ax);
  return s - reshape(log(reduce_sum(exp(s), ax)), kept(xf, ax));
}

}  // namespace canopy::nn
