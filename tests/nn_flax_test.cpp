// jax.nn.initializers, flax's dropout and batch/layer norm as functions: values against JAX's
// printed examples and against the formulas of jax/_src/nn/initializers.py and
// flax/linen/normalization.py, with the reference numbers written out (worked out in f64 and
// f32 as JAX computes them).
#include <cmath>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/nn/initializers.hpp>

#include "helpers/cpu_devices.hpp"

using namespace canopy;
namespace init = canopy::nn::initializers;
namespace rnd = canopy::random;

namespace {

void check_close(const Array& got, const std::vector<double>& want, double tol) {
  const auto g = got.astype(DType::f64).to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    if (tol == 0) CHECK(g[i] == want[i]);
    else CHECK(g[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
  }
}

bool same_bits(const Array& a, const Array& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && a.to_vector<float>() == b.to_vector<float>();
}

double variance_of(const Array& x) {
  auto v = x.astype(DType::f64).to_vector<double>();
  double m = 0, s = 0;
  for (double e : v) m += e;
  m /= static_cast<double>(v.size());
  for (double e : v) s += (e - m) * (e - m);
  return s / static_cast<double>(v.size());
}

}  // namespace

TEST_CASE("initializers match jax.nn.initializers' printed examples for PRNGKey(42), (2, 3) (legacy layout)") {
  // The docstrings of jax/_src/nn/initializers.py print these for jax.random.PRNGKey(42) and shape
  // (2, 3) in float32; they were generated with the older key layout (jax_threefry_partitionable off).
  rnd::LayoutScope legacy(rnd::Layout::legacy);
  const Array k = rnd::PRNGKey(42);
  check_close(init::glorot_uniform()(k, {2, 3}), {0.50350785, 0.8088631, 0.81566876, -0.6393332, -0.6865721, 0.11003882}, 2e-6);
  check_close(init::glorot_normal()(k, {2, 3}), {0.41770416, 0.75262755, 0.7619329, -0.5516644, -0.6028657, 0.08661086}, 2e-6);
  check_close(init::lecun_uniform()(k, {2, 3}), {0.56293887, 0.90433645, 0.9119454, -0.71479625, -0.7676109, 0.12302713}, 2e-6);
  check_close(init::lecun_normal()(k, {2, 3}), {0.46700746, 0.8414632, 0.8518669, -0.61677957, -0.67402434, 0.09683388}, 2e-6);
  check_close(init::he_uniform()(k, {2, 3}), {0.79611576, 1.2789248, 1.2896855, -1.0108745, -1.0855657, 0.17398663}, 2e-6);
  check_close(init::he_normal()(k, {2, 3}), {0.6604483, 1.1900088, 1.2047218, -0.87225807, -0.95321447, 0.1369438}, 2e-6);
  check_close(init::uniform(10.0)(k, {2, 3}), {7.298188, 8.691938, 8.7230015, 2.0818567, 1.8662417, 5.5022564}, 2e-6);
  check_close(init::normal(5.0)(k, {2, 3}), {3.0613258, 5.6129413, 5.6866574, -4.063663, -4.4520254, 0.63115686}, 2e-6);
  check_close(init::truncated_normal(5.0)(k, {2, 3}), {2.9047365, 5.2338114, 5.29852, -3.836303, -4.192359, 0.6022964}, 2e-6);
  // orthogonal's QR runs in f64 here, in f32 in JAX: equal to about 1e-6.
  check_close(init::orthogonal()(k, {2, 3}), {3.9026976e-01, 7.2495741e-01, -5.6756169e-01, 8.8047469e-01, -4.7409311e-01, -1.3157725e-04},
              1e-5);
  check_close(init::constant(-7)(k, {2, 3}), {-7, -7, -7, -7, -7, -7}, 0);
  check_close(init::zeros(k, {2, 3}), {0, 0, 0, 0, 0, 0}, 0);
  check_close(init::ones(k, {3, 2}), {1, 1, 1, 1, 1, 1}, 0);
}

TEST_CASE("variance_scaling: the samplers times JAX's scale factors, bit for bit, with fans over in/out/batch axes") {
  // The factors as JAX computes them in f32: variance = f32(scale / n); truncated_normal divides
  // sqrt(variance) by f32(.87962566103423978), the deviation of a standard normal cut to (-2, 2);
  // uniform multiplies uniform(-1, 1) by sqrt(3 * variance).
  const Array k = rnd::key(7);
  const Shape dense{2, 3};  // fan_in 2, fan_out 3, fan_avg 2.5
  const Array tn = rnd::truncated_normal(k, -2.0, 2.0, dense), u = rnd::uniform(k, dense, DType::f32, -1.0, 1.0),
              n = rnd::normal(k, dense);
  CHECK(same_bits(init::glorot_normal()(k, dense), tn * scalar(0.719005286693573f)));
  CHECK(same_bits(init::lecun_normal()(k, dense), tn * scalar(0.8038723468780518f)));
  CHECK(same_bits(init::he_normal()(k, dense), tn * scalar(1.1368472576141357f)));
  CHECK(same_bits(init::glorot_uniform()(k, dense), u * scalar(1.095445156097412f)));
  CHECK(same_bits(init::lecun_uniform()(k, dense), u * scalar(1.2247449159622192f)));
  CHECK(same_bits(init::he_uniform()(k, dense), u * scalar(1.7320507764816284f)));
  CHECK(same_bits(init::variance_scaling(1.0, init::FanMode::fan_avg, init::Distribution::normal)(k, dense),
                  n * scalar(0.6324555277824402f)));
  // A 3x3 convolution kernel HWIO (3, 3, 4, 8): receptive field 9, fan_in 36, fan_out 72.
  const Shape conv{3, 3, 4, 8};
  CHECK(same_bits(init::he_normal()(k, conv), rnd::truncated_normal(k, -2.0, 2.0, conv) * scalar(0.2679574489593506f)));
  CHECK(same_bits(init::glorot_uniform()(k, conv), rnd::uniform(k, conv, DType::f32, -1.0, 1.0) * scalar(0.2357022613286972f)));
  // The same kernel laid out OIHW: in axis 1, out axis 0.
  CHECK(same_bits(init::he_normal({.in_axis = {1}, .out_axis = {0}})(k, Shape{8, 4, 3, 3}),
                  rnd::truncated_normal(k, -2.0, 2.0, Shape{8, 4, 3, 3}) * scalar(0.2679574489593506f)));
  CHECK(init::he_normal()(k, dense, DType::f64).dtype() == DType::f64);
  CHECK_THROWS_AS(init::glorot_uniform()(k, {5}), ShapeError);  // no fans for 1-D weights
  CHECK_THROWS_AS(init::variance_scaling(0.0, init::FanMode::fan_in, init::Distribution::normal), ValueError);
}

TEST_CASE("variance_scaling's samples have the variance scale / fan, truncated_normal included") {
  const Array k = rnd::key(3);
  const Shape s{400, 300};  // fan_in 400, fan_out 300
  CHECK(variance_of(init::he_normal()(k, s)) == doctest::Approx(2.0 / 400).epsilon(0.02));
  CHECK(variance_of(init::glorot_normal()(k, s)) == doctest::Approx(1.0 / 350).epsilon(0.02));
  CHECK(variance_of(init::lecun_uniform()(k, s)) == doctest::Approx(1.0 / 400).epsilon(0.02));
  CHECK(variance_of(init::variance_scaling(3.0, init::FanMode::fan_out, init::Distribution::uniform)(k, s)) ==
        doctest::Approx(3.0 / 300).epsilon(0.02));
  // Without the 0.8796 correction the truncated samples' variance would be 0.774 of this.
  CHECK(variance_of(init::truncated_normal(1.0)(k, s)) == doctest::Approx(0.87962566103423978 * 0.87962566103423978).epsilon(0.02));
}

TEST_CASE("orthogonal gives orthonormal columns or rows along column_axis, under jit too") {
  const Array k = rnd::key(11);
  auto check_orthonormal = [](const Array& q, double scale) {  // q: rows x cols, rows >= cols
    Array gram = matmul(transpose(q), q);
    const auto g = gram.astype(DType::f64).to_vector<double>();
    const auto n = static_cast<std::size_t>(q.shape(1));
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) worst = std::max(worst, std::abs(g[i * n + j] - (i == j ? scale * scale : 0.0)));
    CHECK(worst < 1e-5);
  };
  check_orthonormal(init::orthogonal()(k, {6, 4}), 1.0);
  check_orthonormal(transpose(init::orthogonal(2.0)(k, {3, 7})), 2.0);  // fewer rows: orthonormal rows
  // A kernel (3, 3, 4, 8) with columns along the last axis: a 36 x 8 matrix.
  check_orthonormal(reshape(init::orthogonal()(k, {3, 3, 4, 8}), {36, 8}), 1.0);
  // Columns along axis 0: moving them last gives the matrix of the column_axis = -1 case.
  Array first = init::orthogonal(1.0, 0)(k, {5, 2, 3});
  CHECK(first.shape() == Shape{5, 2, 3});
  check_orthonormal(reshape(transpose(first, {1, 2, 0}), {6, 5}), 1.0);
  auto jitted = jit([](const Array& key) { return init::orthogonal()(key, {6, 4}); });
  CHECK(same_bits(jitted(k), init::orthogonal()(k, {6, 4})));
  CHECK_THROWS_AS(init::orthogonal()(k, {4}), ShapeError);
}

TEST_CASE("dropout keeps 1 - rate of the elements scaled by 1 / (1 - rate), with bernoulli's mask") {
  const Array k = rnd::key(5);
  const Array x = full({4, 5}, 2.0);
  Array y = nn::dropout(k, 0.25, x);
  const Array keep = rnd::bernoulli(k, 0.75, Shape{4, 5});
  const auto yv = y.to_vector<float>();
  const auto kv = keep.to_vector<bool>();
  for (std::size_t i = 0; i < yv.size(); ++i) CHECK(yv[i] == (kv[i] ? 2.6666667f : 0.0f));  // 2 / 0.75
  CHECK(same_bits(nn::dropout(k, 0.0, x), x));
  CHECK(same_bits(nn::dropout(k, 1.0, x), zeros({4, 5})));
  // Inverted scaling keeps the mean: E[dropout(x)] = x.
  Array big = nn::dropout(rnd::key(6), 0.5, ones({200000}));
  CHECK(mean(big).item<float>() == doctest::Approx(1.0).epsilon(0.01));
  CHECK(mean((big == 0.0f).astype(DType::f32)).item<float>() == doctest::Approx(0.5).epsilon(0.01));
  auto g = grad([&](const Array& v) { return sum(nn::dropout(k, 0.25, v)); })(x);
  const auto gv = g.to_vector<float>();
  for (std::size_t i = 0; i < gv.size(); ++i) CHECK(gv[i] == (kv[i] ? 1.3333334f : 0.0f));
  CHECK_THROWS_AS(nn::dropout(k, 1.5, x), ValueError);
  CHECK_THROWS_AS(nn::dropout(k, -0.1, x), ValueError);
}

TEST_CASE("batch_norm: flax's training statistics, running averages and evaluation with them") {
  // x (4, 2), features on the last axis; flax BatchNorm(momentum=0.9, epsilon=1e-5).
  const Array x = array({{1.f, 2.f}, {3.f, 5.f}, {-1.f, 0.5f}, {4.f, -2.f}});
  const Array scale = array({1.5f, 0.5f}), bias = array({0.1f, -0.2f});
  nn::BatchNormStats stats = nn::batch_norm_init(2);
  check_close(stats.mean, {0, 0}, 0);
  check_close(stats.var, {1, 1}, 0);
  auto [y, next] = nn::batch_norm(x, stats, scale, bias, {.momentum = 0.9});
  // Batch mean [1.75, 1.375], variance E[x^2] - mean^2 = [3.6875, 6.421875].
  check_close(y, {-0.485849305, -0.0766841901, 1.07641551, 0.515231697, -2.04811412, -0.372642134, 1.85754792, -0.865905373}, 2e-6);
  check_close(next.mean, {0.175, 0.1375}, 1e-6);
  check_close(next.var, {1.26875, 1.5421875}, 1e-6);
  auto [y_eval, same] = nn::batch_norm(x, next, scale, bias, {.use_running_average = true});
  check_close(y_eval, {1.19864016, 0.549887801, 3.86201023, 1.75776077, -1.46472992, -0.0540486831, 5.19369527, -1.06060949}, 2e-6);
  CHECK(same_bits(same.mean, next.mean));
  // The statistics are a pytree: a train state carries them through jit and grad.
  auto loss = [&](const Array& s, const nn::BatchNormStats& st) {
    auto [out, updated] = nn::batch_norm(x, st, s, bias);
    return std::make_pair(sum(out * out), updated);
  };
  auto [value_and_stats, g] = jit(value_and_grad(loss, has_aux))(scale, stats);
  CHECK(value_and_stats.second.mean.shape() == Shape{2});
  CHECK(g.shape() == Shape{2});
  // Under pmap over a split batch with axis_name, the statistics are the whole batch's.
  CpuDevices two(2);
  auto per_device = pmap([&](const Array& xs) { return nn::batch_norm(xs, stats, scale, bias, {.momentum = 0.9, .axis_name = "d"}); },
                         axis_name("d"));
  auto [y_dev, stats_dev] = per_device(reshape(x, {2, 2, 2}));
  check_close(reshape(y_dev, {4, 2}), {-0.485849305, -0.0766841901, 1.07641551, 0.515231697, -2.04811412, -0.372642134, 1.85754792,
                                       -0.865905373},
              2e-6);
  check_close(stats_dev.mean[1], {0.175, 0.1375}, 1e-6);
  CHECK_THROWS_AS(nn::batch_norm(x, nn::batch_norm_init(3)), ShapeError);
}

TEST_CASE("layer_norm with its parameters as a pytree normalises each row") {
  const Array x = array({{1.f, 2.f}, {3.f, 5.f}, {-1.f, 0.5f}, {4.f, -2.f}});
  nn::LayerNormParams p = nn::layer_norm_init(2);
  check_close(p.scale, {1, 1}, 0);
  check_close(p.bias, {0, 0}, 0);
  check_close(nn::layer_norm(x, p), {-0.999998, 0.999998, -0.9999995, 0.9999995, -0.999999111, 0.999999111, 0.999999944, -0.999999944},
              1e-6);
}
