// `softmax`: exp(x - max) / sum(exp(x - max)) along one axis, fused into one primitive so f32 runs
// as a single oneDNN pass (JAX composes it from reduce_max/exp/reduce_sum, and the kernel computes
// exactly that); rules, samples, op (jax.nn.softmax). Its kernels: src/backends/<kind>/nn.cpp.
#include "../rules.hpp"
#include "softmax_params.hpp"
#include "canopy/nn.hpp"

namespace canopy::prim {
struct Softmax {
  static constexpr std::string_view name = "softmax";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::SoftmaxParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    Aval out = detail::unary_aval(name, avals, detail::kFloat);
    detail::normalize_axis(name, params.axis, out.ndim(), out);
    return out;
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    // d softmax = y * (t - sum(y * t)) along the axis.
    Array y = nn::softmax(x[0], params.axis);
    Array keep = reduce_sum(y * t[0], {params.axis});
    return {{y}, {y * (t[0] - expand_dims(keep, {params.axis}))}};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    // The axis is one of an example's: behind a leading batch axis it moves up by one.
    Array front = detail::batch_to_front(x[0], bdims[0]);
    const int rank = static_cast<int>(front.ndim()) - 1;
    return {{bind1<Softmax>({front}, {(params.axis < 0 ? params.axis + rank : params.axis) + 1})}, {0}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {3, 5}, -4, 4, 1)}, {1}, "rows"},
            {{sample_array(DType::f32, {2, 3, 4}, -4, 4, 2)}, {1}, "middle axis"},
            {{sample_array(DType::f64, {4, 3}, -4, 4, 3)}, {0}, "f64 columns"},
            {{sample_array(DType::bf16, {2, 6}, -4, 4, 4)}, {1}, "bf16"},
            {{sample_array(DType::f32, {0, 3}, -4, 4, 5)}, {1}, "empty"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(Softmax);
}  // namespace canopy::prim

namespace canopy::nn {
Array softmax(const Array& x, int axis) {
  Array xf = detail::to_float(x);
  return bind1<prim::Softmax>({xf}, {detail::normalize_axis("softmax", axis, xf.ndim(), xf.aval())});
}
}  // namespace canopy::nn
