// canopy::nn: jax.nn's activations and softmax, flax.linen's layer and batch norm and pooling as
// functions, composed from the primitive ops (softmax/log_softmax are fused primitives; pooling is
// reduce_window). What draws from a key lives with canopy::random: <canopy/nn/initializers.hpp>
// and <canopy/nn/dropout.hpp>.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "canopy/array.hpp"
#include "canopy/ops.hpp"
#include "canopy/x64.hpp"

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

/// flax.linen.LayerNorm's parameters: one scale and one bias per feature (a pytree).
struct LayerNormParams {
  Array scale;  ///< ones at init
  Array bias;   ///< zeros at init
};
/// Parameters for `features` features as flax initialises them (scale ones, bias zeros).
LayerNormParams layer_norm_init(std::int64_t features, DType dtype = default_float_dtype());
/// layer_norm with the parameters as one pytree.
Array layer_norm(const Array& x, const LayerNormParams& params, double epsilon = 1e-6, int axis = -1);

/// flax.linen.BatchNorm's running statistics (its `batch_stats` collection), one per feature: a
/// pytree the caller carries in its train state, like flax's mutable collection.
struct BatchNormStats {
  Array mean;  ///< zeros at init
  Array var;   ///< ones at init
};
/// Statistics for `features` features as flax initialises them (f32 mean zeros, var ones).
BatchNormStats batch_norm_init(std::int64_t features);
/// Options of batch_norm (flax.linen.BatchNorm's attributes).
struct BatchNormOptions {
  /// Normalise with the running statistics (evaluation) instead of the batch's (training).
  bool use_running_average = false;
  /// The feature axis; every other axis is reduced.
  int axis = -1;
  /// Decay of the running averages: new = momentum * old + (1 - momentum) * batch.
  double momentum = 0.99;
  double epsilon = 1e-5;
  /// Inside pmap or vmap over this axis, the batch statistics are averaged over it (pmean), so
  /// every replica normalises with the statistics of the whole global batch.
  std::optional<std::string> axis_name = std::nullopt;
};
/// flax.linen.BatchNorm as a function: (y, new statistics). In training the statistics are the
/// batch's, computed in at least f32 as flax does (mean and E[x^2] - mean^2, clipped at 0; pmean'd
/// over axis_name), y = (x - mean) * rsqrt(var + epsilon) * scale + bias, and the running averages
/// move by `momentum`; with use_running_average they normalise x and come back unchanged. scale and
/// bias hold one value per feature (an empty Array skips either). ShapeError for parameters or
/// statistics of another size.
std::pair<Array, BatchNormStats> batch_norm(const Array& x, const BatchNormStats& stats, const Array& scale = {},
                                            const Array& bias = {}, const BatchNormOptions& options = {});

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
