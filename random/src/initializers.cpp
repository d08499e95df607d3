// jax.nn.initializers (jax/_src/nn/initializers.py): the constant and random initializers and
// variance_scaling, each value computed in the weights' dtype in JAX's order of operations;
// orthogonal's QR runs on the host (Householder in f64) through pure_callback.
#include "canopy/nn/initializers.hpp"

#include <cmath>
#include <numeric>

#include "canopy/error.hpp"
#include "canopy/numpy.hpp"
#include "canopy/random.hpp"
#include "canopy/transforms/callback.hpp"

namespace canopy::nn::initializers {
namespace {

std::size_t axis_index(std::string_view api, int axis, const Shape& shape) {
  const int rank = static_cast<int>(shape.size());
  if (axis < -rank || axis >= rank)
    detail::raise<ShapeError>(api, "axis", std::to_string(axis), detail::concat("is out of range for shape ", to_string(shape)));
  return static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
}

double size_along(std::string_view api, const std::vector<int>& axes, const Shape& shape) {
  double n = 1;
  for (int a : axes) n *= static_cast<double>(shape[axis_index(api, a, shape)]);
  return n;
}

/// (fan_in, fan_out) as JAX's _compute_fans: the receptive field is what the other axes hold.
std::pair<double, double> fans(const FanAxes& axes, const Shape& shape) {
  constexpr std::string_view api = "variance_scaling";
  if (shape.size() < 2)
    detail::raise<ShapeError>(api, "shape", to_string(shape), "has no input and output sizes: it must be at least 2-D");
  double total = 1;
  for (std::int64_t d : shape) total *= static_cast<double>(d);
  const double in = size_along(api, axes.in_axis, shape), out = size_along(api, axes.out_axis, shape);
  const double receptive = total / in / out / size_along(api, axes.batch_axis, shape);
  return {in * receptive, out * receptive};
}

/// A 0-d array of `dtype` holding `v` rounded once, as jnp.array(v, dtype).
Array constant_of(double v, DType dtype) { return scalar(v).astype(dtype); }

/// The m x n (m >= n) matrix `a` (row-major) replaced by the Q of its QR whose R has a
/// non-negative diagonal: JAX's qr followed by Q * sign(diag(R)) (a zero diagonal zeroes its column).
std::vector<double> positive_q(std::vector<double> a, std::int64_t m, std::int64_t n) {
  auto at = [&](std::vector<double>& x, std::int64_t i, std::int64_t j) -> double& { return x[static_cast<std::size_t>(i * n + j)]; };
  std::vector<std::vector<double>> reflectors;
  std::vector<double> sign(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t k = 0; k < n; ++k) {
    double norm = 0;
    for (std::int64_t i = k; i < m; ++i) norm += at(a, i, k) * at(a, i, k);
    norm = std::sqrt(norm);
    std::vector<double> v(static_cast<std::size_t>(m - k), 0.0);
    if (norm == 0) {  // R's diagonal entry is 0: no reflection, and JAX's sign(0) zeroes the column
      reflectors.push_back(std::move(v));
      continue;
    }
    const double x0 = at(a, k, k);
    const double alpha = x0 > 0 ? -norm : norm;  // R[k][k]; the reflection avoids cancellation
    sign[static_cast<std::size_t>(k)] = alpha > 0 ? 1.0 : -1.0;
    for (std::int64_t i = k; i < m; ++i) v[static_cast<std::size_t>(i - k)] = at(a, i, k);
    v[0] -= alpha;
    double vv = 0;
    for (double e : v) vv += e * e;
    for (std::int64_t j = k; j < n; ++j) {
      double dot = 0;
      for (std::int64_t i = k; i < m; ++i) dot += v[static_cast<std::size_t>(i - k)] * at(a, i, j);
      const double f = 2 * dot / vv;
      for (std::int64_t i = k; i < m; ++i) at(a, i, j) -= f * v[static_cast<std::size_t>(i - k)];
    }
    for (double& e : v) e /= std::sqrt(vv);
    reflectors.push_back(std::move(v));
  }
  // Q = H_0 H_1 ... H_{n-1} applied to the first n columns of the identity.
  std::vector<double> q(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t j = 0; j < n; ++j) at(q, j, j) = 1;
  for (std::int64_t k = n - 1; k >= 0; --k) {
    const std::vector<double>& v = reflectors[static_cast<std::size_t>(k)];
    for (std::int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (std::int64_t i = k; i < m; ++i) dot += v[static_cast<std::size_t>(i - k)] * at(q, i, j);
      for (std::int64_t i = k; i < m; ++i) at(q, i, j) -= 2 * dot * v[static_cast<std::size_t>(i - k)];
    }
  }
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) at(q, i, j) *= sign[static_cast<std::size_t>(j)];
  return q;
}

}  // namespace

Array zeros(const Array&, const Shape& shape, DType dtype) { return canopy::zeros(shape, dtype); }
Array ones(const Array&, const Shape& shape, DType dtype) { return canopy::ones(shape, dtype); }

Initializer constant(double value) {
  return Initializer([value](const Array&, const Shape& shape, DType dtype) { return full(shape, value, dtype); });
}

Initializer uniform(double scale) {
  return Initializer([scale](const Array& key, const Shape& shape, DType dtype) {
    return random::uniform(key, shape, dtype) * constant_of(scale, dtype);
  });
}

Initializer normal(double stddev) {
  return Initializer([stddev](const Array& key, const Shape& shape, DType dtype) {
    return random::normal(key, shape, dtype) * constant_of(stddev, dtype);
  });
}

Initializer truncated_normal(double stddev, double lower, double upper) {
  return Initializer([stddev, lower, upper](const Array& key, const Shape& shape, DType dtype) {
    return random::truncated_normal(key, lower, upper, shape, dtype) * constant_of(stddev, dtype);
  });
}

Initializer variance_scaling(double scale, FanMode mode, Distribution distribution, FanAxes axes) {
  if (!(scale > 0) || !std::isfinite(scale))
    detail::raise<ValueError>("variance_scaling", "scale", std::to_string(scale), "must be a positive finite number");
  return Initializer([=](const Array& key, const Shape& shape, DType dtype) {
    auto [fan_in, fan_out] = fans(axes, shape);
    const double denominator = mode == FanMode::fan_in ? fan_in : mode == FanMode::fan_out ? fan_out : (fan_in + fan_out) / 2;
    Array variance = constant_of(scale / denominator, dtype);
    switch (distribution) {
      case Distribution::truncated_normal:
        // 0.87962566103423978: the standard deviation of a standard normal truncated to (-2, 2).
        return random::truncated_normal(key, -2.0, 2.0, shape, dtype) *
               (sqrt(variance) / constant_of(.87962566103423978, dtype));
      case Distribution::normal: return random::normal(key, shape, dtype) * sqrt(variance);
      case Distribution::uniform: break;
    }
    return random::uniform(key, shape, dtype, -1.0, 1.0) * sqrt(3 * variance);
  });
}

Initializer glorot_uniform(FanAxes axes) { return variance_scaling(1.0, FanMode::fan_avg, Distribution::uniform, std::move(axes)); }
Initializer glorot_normal(FanAxes axes) {
  return variance_scaling(1.0, FanMode::fan_avg, Distribution::truncated_normal, std::move(axes));
}
Initializer lecun_uniform(FanAxes axes) { return variance_scaling(1.0, FanMode::fan_in, Distribution::uniform, std::move(axes)); }
Initializer lecun_normal(FanAxes axes) {
  return variance_scaling(1.0, FanMode::fan_in, Distribution::truncated_normal, std::move(axes));
}
Initializer he_uniform(FanAxes axes) { return variance_scaling(2.0, FanMode::fan_in, Distribution::uniform, std::move(axes)); }
Initializer he_normal(FanAxes axes) {
  return variance_scaling(2.0, FanMode::fan_in, Distribution::truncated_normal, std::move(axes));
}

Initializer orthogonal(double scale, int column_axis) {
  return Initializer([scale, column_axis](const Array& key, const Shape& shape, DType dtype) {
    constexpr std::string_view api = "orthogonal";
    if (shape.size() < 2)
      detail::raise<ShapeError>(api, "shape", to_string(shape), "must be at least 2-D");
    const std::size_t c = axis_index(api, column_axis, shape);
    std::int64_t total = 1;
    for (std::int64_t d : shape) total *= d;
    const std::int64_t cols = shape[c], rows = cols ? total / cols : 0;
    const std::int64_t m = std::max(rows, cols), n = std::min(rows, cols);
    Array a = random::normal(key, Shape{m, n}, dtype);
    Array q = pure_callback(
        [m, n](const Array& concrete) {
          return array(positive_q(concrete.astype(DType::f64).to_vector<double>(), m, n), Shape{m, n}).astype(concrete.dtype());
        },
        a, a);
    if (rows < cols) q = transpose(q);
    // Rows x cols, the columns moved to column_axis.
    Shape folded;
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (i != c) folded.push_back(shape[i]);
    folded.push_back(cols);
    std::vector<int> perm;
    for (int i = 0; i + 1 < static_cast<int>(shape.size()); ++i) perm.push_back(i);
    perm.insert(perm.begin() + static_cast<std::ptrdiff_t>(c), static_cast<int>(shape.size()) - 1);
    return constant_of(scale, dtype) * transpose(reshape(q, folded), perm);
  });
}

}  // namespace canopy::nn::initializers
