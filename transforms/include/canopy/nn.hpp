// canopy::nn: jax.nn's activations and softmax, flax.linen's layer_norm and pooling, composed
// from the primitive ops (softmax/log_softmax are fused primitives; pooling is reduce_window).
#pragma once

#include <cstdint>
#include <vector>

#include "canopy/array.hpp"
#include "canopy/ops.hpp"

namespace canopy::nn {

/// jax.nn.relu: max(x, 0).
Array relu(const Array& x);
/// jax.nn.gelu: x * Phi(x); `approximate` (the default, as in JAX) uses the tanh form
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), otherwise the exact erf form.
Array gelu(const Array& x, bool approximate = true);
/// jax.nn.silu: x * sigmoid(x).
Array silu(const Array& x);
/// jax.nn.swish: the same function as silu.
inline Array swish(const Array& x) { return silu(x); }
/// jax.nn.softplus: log(1 + e^x) computed as logaddexp(x, 0) (no overflow for large x).
Array softplus(const Array& x);

/// jax.nn.softmax along one axis: exp(x - max) / sum(exp(x - max)) (a fused primitive).
Array softmax(const Array& x, int axis = -1);
/// jax.nn.softmax over several axes at once (composed from reduce_max/exp/reduce_sum).
Array softmax(const Array& x, const std::vector<int>& axes);
/// jax.nn.log_softmax along one axis: (x - max) - log(sum(exp(x - max))) (a fused primitive).
Array log_softmax(const Array& x, int axis = -1);
/// jax.nn.log_softmax over several axes at once (composed).
Array log_softmax(const Array& x, const std::vector<int>& axes);

/// flax.linen.LayerNorm's function: (x - mean) / sqrt(var + epsilon) over `axis`, then * scale
/// + bias when given (shape [x.shape(axis)]; an empty Array skips it). Flax's epsilon default.
Array layer_norm(const Array& x, const Array& scale = {}, const Array& bias = {}, double epsilon = 1e-6,
                 int axis = -1);

/// flax.linen.max_pool on channels-last input (batch..., spatial..., features): `window_shape`
/// and `strides` (default 1) cover the spatial dims; padding "VALID", "SAME" or (low, high) pairs.
/// Lowered to reduce_window_max.
Array max_pool(const Array& x, const std::vector<std::int64_t>& window_shape,
               const std::vector<std::int64_t>& strides = {}, const Padding& padding = "VALID");
/// flax.linen.avg_pool: the window sums (reduce_window_sum) divided by the window size, or with
/// count_include_pad = false by the number of non-padding elements in each window.
Array avg_pool(const Array& x, const std::vector<std::int64_t>& window_shape,
               const std::vector<std::int64_t>& strides = {}, const Padding& padding = "VALID",
               bool count_include_pad = true);

}  // namespace canopy::nn
