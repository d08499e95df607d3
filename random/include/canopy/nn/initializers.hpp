// jax.nn.initializers: functions (key, shape, dtype) -> Array, and the builders that make them
// (variance_scaling and its glorot/lecun/he specialisations, orthogonal), with JAX's formulas, so
// a key gives the numbers JAX gives (up to rounding in orthogonal's QR).
#pragma once

#include <functional>
#include <vector>

#include "canopy/array.hpp"
#include "canopy/x64.hpp"

namespace canopy::nn::initializers {

/// An initializer: `init(key, shape)` or `init(key, shape, dtype)` (default: the default float
/// dtype, f32 unless x64 is on), as jax.nn.initializers.Initializer.
class Initializer {
 public:
  using Fn = std::function<Array(const Array& key, const Shape& shape, DType dtype)>;
  Initializer(Fn fn) : fn_(std::move(fn)) {}  // NOLINT: implicit, as a Python callable is
  /// The initial value of `shape` in `dtype`.
  Array operator()(const Array& key, const Shape& shape, DType dtype = default_float_dtype()) const {
    return fn_(key, shape, dtype);
  }

 private:
  Fn fn_;
};

/// jax.nn.initializers.zeros: the key is ignored.
Array zeros(const Array& key, const Shape& shape, DType dtype = default_float_dtype());
/// jax.nn.initializers.ones: the key is ignored.
Array ones(const Array& key, const Shape& shape, DType dtype = default_float_dtype());
/// jax.nn.initializers.constant(value).
Initializer constant(double value);
/// jax.nn.initializers.uniform(scale): uniform on [0, scale).
Initializer uniform(double scale = 1e-2);
/// jax.nn.initializers.normal(stddev): normal with mean 0 and standard deviation stddev.
Initializer normal(double stddev = 1e-2);
/// jax.nn.initializers.truncated_normal(stddev, lower, upper): truncated_normal(key, lower,
/// upper) * stddev, with no correction of the truncated distribution's smaller deviation (as JAX).
Initializer truncated_normal(double stddev = 1e-2, double lower = -2.0, double upper = 2.0);

/// Which fan variance_scaling divides by.
enum class FanMode { fan_in, fan_out, fan_avg };
/// What variance_scaling draws from.
enum class Distribution { truncated_normal, normal, uniform };
/// The axes of the weights' input and output units (several: their sizes multiply) and the axes
/// that are ignored; every other axis is the receptive field (a convolution's spatial dims).
struct FanAxes {
  std::vector<int> in_axis{-2};
  std::vector<int> out_axis{-1};
  std::vector<int> batch_axis{};
};

/// jax.nn.initializers.variance_scaling: variance = scale / n with n the fan_in, fan_out or their
/// mean (fan_in = in size x receptive field size, fan_out likewise); then
///   truncated_normal: truncated_normal(key, -2, 2) * sqrt(variance) / 0.87962566103423978 (the
///                     standard deviation of a standard normal truncated to (-2, 2), so the result
///                     has variance `variance`),
///   normal:           normal(key) * sqrt(variance),
///   uniform:          uniform(key, -1, 1) * sqrt(3 variance),
/// each computed in the weights' dtype as JAX does. Shapes of rank < 2 are a ShapeError (JAX's
/// ValueError: no fans).
Initializer variance_scaling(double scale, FanMode mode, Distribution distribution, FanAxes axes = {});

/// variance_scaling(1, fan_avg, uniform) (Xavier uniform).
Initializer glorot_uniform(FanAxes axes = {});
/// variance_scaling(1, fan_avg, truncated_normal) (Xavier normal).
Initializer glorot_normal(FanAxes axes = {});
/// variance_scaling(1, fan_in, uniform).
Initializer lecun_uniform(FanAxes axes = {});
/// variance_scaling(1, fan_in, truncated_normal).
Initializer lecun_normal(FanAxes axes = {});
/// variance_scaling(2, fan_in, uniform) (Kaiming uniform).
Initializer he_uniform(FanAxes axes = {});
/// variance_scaling(2, fan_in, truncated_normal) (Kaiming normal).
Initializer he_normal(FanAxes axes = {});
/// jax.nn.initializers' other names for the same builders.
inline Initializer xavier_uniform(FanAxes axes = {}) { return glorot_uniform(std::move(axes)); }
inline Initializer xavier_normal(FanAxes axes = {}) { return glorot_normal(std::move(axes)); }
inline Initializer kaiming_uniform(FanAxes axes = {}) { return he_uniform(std::move(axes)); }
inline Initializer kaiming_normal(FanAxes axes = {}) { return he_normal(std::move(axes)); }

/// jax.nn.initializers.orthogonal: a matrix of rows x cols = (size / shape[column_axis]) x
/// shape[column_axis] with orthonormal columns (or rows, when there are fewer rows), from the QR
/// of normal(key, (max, min)) with R's diagonal made positive, times `scale`, reshaped to `shape`
/// with the columns along column_axis. The QR runs on the host in f64 (a pure_callback, so it also
/// works under jit). ShapeError for a rank below 2.
Initializer orthogonal(double scale = 1.0, int column_axis = -1);

}  // namespace canopy::nn::initializers
