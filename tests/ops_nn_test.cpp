// canopy::nn activations, softmax/log_softmax, layer_norm and the jnp statistics (logsumexp,
// var, std) against double-precision references on random shapes with size-0 and size-1 dims,
// every axis, extreme values; and the errors.
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/nn.hpp>

using namespace canopy;

namespace {

Array random_array(const Shape& s, DType d, unsigned seed, double lo = -5, double hi = 5) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(shape_size(s)));
  for (auto& x : v) x = u(g);
  return array(v, s).astype(d);
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    bool same_special = (std::isnan(got[i]) && std::isnan(want[i])) || (std::isinf(want[i]) && got[i] == want[i]);
    bad += !same_special && !(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
  }
  CHECK(bad == 0);
}

double tol_of(DType d) { return d == DType::f64 ? 1e-12 : 2e-6; }

// Visits the rows along `axis`: f(indices of the row's elements).
template <class F>
void for_rows(const Shape& s, int axis, F f) {
  std::int64_t n = s[static_cast<std::size_t>(axis)], inner = 1, outer = 1;
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  for (int d = 0; d < axis; ++d) outer *= s[static_cast<std::size_t>(d)];
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      std::vector<std::size_t> idx;
      for (std::int64_t j = 0; j < n; ++j) idx.push_back(static_cast<std::size_t>((o * n + j) * inner + i));
      f(idx);
    }
}

// Reference (log-)softmax in double: exp(x - max) / sum, per row.
std::vector<double> ref_softmax(const std::vector<double>& x, const Shape& s, int axis, bool log) {
  std::vector<double> y(x.size());
  for_rows(s, axis, [&](const std::vector<std::size_t>& idx) {
    double m = -INFINITY, sum = 0;
    for (auto i : idx) m = std::max(m, x[i]);
    for (auto i : idx) sum += std::exp(x[i] - m);
    for (auto i : idx) y[i] = log ? x[i] - m - std::log(sum) : std::exp(x[i] - m) / sum;
  });
  return y;
}

const Shape kShapes[] = {{7}, {1}, {3, 4}, {1, 5}, {4, 1}, {2, 3, 5}, {2, 1, 3, 2}, {0, 3}, {3, 0}, {64, 1000}};

}  // namespace

TEST_CASE("relu, gelu (tanh and erf forms), silu and softplus match their double formulas") {
  for (DType d : {DType::f32, DType::f64}) {
    Array x = random_array({5, 37}, d, 1, -8, 8);
    auto xv = x.to_vector<double>();
    std::vector<double> relu, gelu_t, gelu_e, silu, softplus;
    for (double v : xv) {
      relu.push_back(v > 0 ? v : 0);
      gelu_t.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
      gelu_e.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
      silu.push_back(v / (1 + std::exp(-v)));
      softplus.push_back(std::log1p(std::exp(v)));
    }
    double t = d == DType::f64 ? 1e-12 : 1e-5;
    expect_close(nn::relu(x).to_vector<double>(), relu, 0);
    expect_close(nn::gelu(x).to_vector<double>(), gelu_t, t);
    expect_close(nn::gelu(x, false).to_vector<double>(), gelu_e, t);
    expect_close(nn::silu(x).to_vector<double>(), silu, t);
    expect_close(nn::swish(x).to_vector<double>(), silu, t);
    expect_close(nn::softplus(x).to_vector<double>(), softplus, t);
    CHECK(nn::gelu(x).dtype() == d);
  }
  // The tanh and erf forms differ (by up to ~1e-3), so the flag is not ignored.
  CHECK(std::fabs(nn::gelu(scalar(1.5)).item<double>() - nn::gelu(scalar(1.5), false).item<double>()) > 1e-5);
  // softplus is logaddexp(x, 0): no overflow, exact tails, infinities and NaN.
  auto sp = nn::softplus(array({100.f, -100.f, INFINITY, -INFINITY, NAN, 0.f})).to_vector<float>();
  CHECK(sp[0] == 100.f);
  CHECK(sp[1] == doctest::Approx(std::exp(-100.0)).epsilon(1e-5));
  CHECK(sp[2] == INFINITY);
  CHECK(sp[3] == 0.f);
  CHECK(std::isnan(sp[4]));
  CHECK(sp[5] == doctest::Approx(std::log(2.0)));
  // softplus's derivative is logistic(x) everywhere, 1/2 at the kink of its formula (as jax's logaddexp).
  std::vector<float> dsp = grad([](const Array& v) { return sum(nn::softplus(v)); })(array({-2.f, 0.f, 3.f})).to_vector<float>();
  CHECK(dsp[0] == doctest::Approx(1.0 / (1.0 + std::exp(2.0))));
  CHECK(dsp[1] == 0.5f);
  CHECK(dsp[2] == doctest::Approx(1.0 / (1.0 + std::exp(-3.0))));
  // Integers: relu keeps them, the others compute in f32 as jax.nn does.
  CHECK(nn::relu(array({-2, 3})).to_vector<int>() == std::vector<int>{0, 3});
  CHECK(nn::silu(array({-2, 3})).dtype() == DType::f32);
  CHECK(nn::relu(zeros({0, 3})).shape() == Shape{0, 3});
}

TEST_CASE("softmax and log_softmax match the reference along every axis") {
  unsigned seed = 10;
  for (DType d : {DType::f32, DType::f64})
    for (const Shape& s : kShapes)
      for (int axis = -static_cast<int>(s.size()); axis < static_cast<int>(s.size()); ++axis) {
        CAPTURE(to_string(s));
        CAPTURE(axis);
        Array x = random_array(s, d, seed++, -30, 30);
        int a = axis < 0 ? axis + static_cast<int>(s.size()) : axis;
        auto xv = x.to_vector<double>();
        Array y = nn::softmax(x, axis), ly = nn::log_softmax(x, axis);
        CHECK(y.dtype() == d);
        CHECK(y.shape() == s);
        expect_close(y.to_vector<double>(), ref_softmax(xv, s, a, false), tol_of(d));
        expect_close(ly.to_vector<double>(), ref_softmax(xv, s, a, true), tol_of(d) * 10);
      }
}

TEST_CASE("softmax is stable for huge and infinite logits, and composes over several axes") {
  for (DType d : {DType::f32, DType::f64}) {
    Array x = array(std::vector<double>{1000, 1001, -1000, -INFINITY, 5, 5, -INFINITY, -INFINITY}, {4, 2}).astype(d);
    auto y = nn::softmax(x).to_vector<double>(), ly = nn::log_softmax(x).to_vector<double>();
    CHECK(y[0] == doctest::Approx(1 / (1 + std::exp(1.0))));
    CHECK(y[2] == 1.0);
    CHECK(y[3] == 0.0);
    CHECK(ly[3] == -INFINITY);
    CHECK(y[4] == doctest::Approx(0.5));
    CHECK(ly[1] == doctest::Approx(-std::log1p(std::exp(-1.0))));
    CHECK(std::isnan(y[6]));  // all -inf: 0/0 as in JAX
    Array xn = array(std::vector<double>{1, NAN, 2, 3, INFINITY, 1}, {3, 2}).astype(d);
    auto yn = nn::softmax(xn).to_vector<double>(), lyn = nn::log_softmax(xn).to_vector<double>();
    CAPTURE(name(d));
    CHECK(std::isnan(yn[0]));
    CHECK(std::isnan(yn[1]));
    CHECK(std::isnan(lyn[0]));
    CHECK(std::isnan(lyn[1]));
    CHECK((std::isnan(yn[4]) && std::isnan(yn[5])));  // +inf: inf - inf in the row, as in JAX
    CHECK(yn[3] == doctest::Approx(1 / (1 + std::exp(-1.0))));
  }
  Array x = random_array({2, 3, 4}, DType::f64, 3);
  auto xv = x.to_vector<double>();
  // Over axes (1, 2) = softmax of each flattened [3*4] row.
  auto want = ref_softmax(xv, {2, 12}, 1, false), lwant = ref_softmax(xv, {2, 12}, 1, true);
  expect_close(nn::softmax(x, std::vector<int>{1, 2}).to_vector<double>(), want, 1e-12);
  expect_close(nn::log_softmax(x, std::vector<int>{-1, 1}).to_vector<double>(), lwant, 1e-12);
  expect_close(nn::softmax(x, std::vector<int>{2}).to_vector<double>(), nn::softmax(x, 2).to_vector<double>(), 0);
  // Transposed (non-contiguous source) input.
  Array t = transpose(x, {2, 0, 1});
  expect_close(nn::softmax(t, 0).to_vector<double>(), ref_softmax(t.to_vector<double>(), t.shape(), 0, false), 1e-12);
  CHECK(nn::softmax(array({1, 2, 3})).dtype() == DType::f32);
  CHECK_THROWS_AS(nn::softmax(x, 3), ShapeError);
  CHECK_THROWS_AS(nn::log_softmax(x, -4), ShapeError);
  CHECK_THROWS_AS(nn::softmax(scalar(1.f)), ShapeError);
}

TEST_CASE("layer_norm normalises over the axis, then applies scale and bias") {
  for (DType d : {DType::f32, DType::f64}) {
    Array x = random_array({3, 2, 6}, d, 4, 90, 110);  // large mean: the two-pass variance matters
    Array scale = random_array({6}, d, 5), bias = random_array({6}, d, 6);
    auto xv = x.to_vector<double>(), sv = scale.to_vector<double>(), bv = bias.to_vector<double>();
    std::vector<double> want(xv.size()), plain(xv.size());
    for_rows(x.shape(), 2, [&](const std::vector<std::size_t>& idx) {
      double m = 0, v = 0;
      for (auto i : idx) m += xv[i] / 6;
      for (auto i : idx) v += (xv[i] - m) * (xv[i] - m) / 6;
      for (std::size_t j = 0; j < idx.size(); ++j) {
        plain[idx[j]] = (xv[idx[j]] - m) / std::sqrt(v + 1e-6);
        want[idx[j]] = plain[idx[j]] * sv[j] + bv[j];
      }
    });
    double t = d == DType::f64 ? 1e-10 : 2e-4;
    expect_close(nn::layer_norm(x, scale, bias).to_vector<double>(), want, t);
    expect_close(nn::layer_norm(x).to_vector<double>(), plain, t);
    // Along axis 0, scale/bias line up with that axis.
    Array xt = transpose(x, {2, 0, 1});
    Array yt = nn::layer_norm(xt, scale, bias, 1e-6, 0);
    expect_close(transpose(yt, {1, 2, 0}).to_vector<double>(), want, t);
  }
  // A constant row normalises to 0 (the epsilon keeps it finite); size-1 feature dims too.
  for (double v : nn::layer_norm(full({2, 4}, 3.0)).to_vector<double>()) CHECK(v == 0.0);
  CHECK(nn::layer_norm(zeros({0, 4})).shape() == Shape{0, 4});
  CHECK(nn::layer_norm(ones({3, 1})).to_vector<float>() == std::vector<float>{0, 0, 0});
  std::string m;
  try {
    nn::layer_norm(zeros({2, 4}), zeros({5}));
  } catch (const ShapeError& e) {
    m = e.what();
  }
  CHECK(m.find("layer_norm: scale") == 0);
  CHECK(m.find("f32[2,4]") != std::string::npos);
  CHECK_THROWS_AS(nn::layer_norm(zeros({2, 4}), ones({4}), zeros({2, 4})), ShapeError);
  CHECK_THROWS_AS(nn::layer_norm(zeros({2, 4}), {}, {}, 1e-6, 2), ShapeError);
}

TEST_CASE("logsumexp, var and std match the reference over every axis subset, with keepdims") {
  for (DType d : {DType::f32, DType::f64})
    for (const Shape& s : {Shape{5}, Shape{3, 4}, Shape{2, 1, 3}, Shape{0, 3}, Shape{4, 0}}) {
      Array x = random_array(s, d, 20, -50, 50);
      auto xv = x.to_vector<double>();
      const unsigned n = static_cast<unsigned>(s.size());
      for (unsigned mask = 0; mask < (1u << n); ++mask) {
        std::vector<int> axes;
        std::int64_t count = 1;
        for (unsigned i = 0; i < n; ++i)
          if (mask >> i & 1u) axes.push_back(static_cast<int>(i)), count *= s[i];
        CAPTURE(to_string(s));
        CAPTURE(mask);
        // Reference: gather each output's elements by projecting indices onto the kept dims.
        Shape kept = s;
        for (int a : axes) kept[static_cast<std::size_t>(a)] = 1;
        std::vector<std::vector<double>> groups(static_cast<std::size_t>(shape_size(kept)));
        Shape st = contiguous_strides(kept);
        for (std::int64_t i = 0; i < shape_size(s); ++i) {
          std::int64_t rem = i, o = 0;
          for (std::size_t dd = s.size(); dd-- > 0;) {
            std::int64_t idx = rem % s[dd];
            rem /= s[dd];
            if (!(mask >> dd & 1u)) o += idx * st[dd];
          }
          groups[static_cast<std::size_t>(o)].push_back(xv[static_cast<std::size_t>(i)]);
        }
        std::vector<double> lse, var0, var1;
        for (auto& g : groups) {
          double m = -INFINITY, sum = 0, mean = 0, ss = 0;
          for (double v : g) m = std::max(m, v);
          for (double v : g) sum += std::exp(v - m);
          lse.push_back(g.empty() ? -INFINITY : m + std::log(sum));
          for (double v : g) mean += v / double(g.size());
          for (double v : g) ss += (v - mean) * (v - mean);
          var0.push_back(g.empty() ? NAN : ss / double(g.size()));
          var1.push_back(ss / double(g.empty() ? 0 : g.size() - 1));  // count <= ddof: inf or NaN
        }
        double t = d == DType::f64 ? 1e-11 : 2e-5;
        Array l = logsumexp(x, Axes{axes}, true), v = var(x, Axes{axes}, 0, true);
        CHECK(l.shape() == kept);
        CHECK(v.shape() == kept);
        expect_close(l.to_vector<double>(), lse, t);
        expect_close(v.to_vector<double>(), var0, t);
        expect_close(var(x, Axes{axes}, 1).to_vector<double>(), var1, t);
        std::vector<double> sd;
        for (double q : var0) sd.push_back(std::sqrt(q));
        expect_close(canopy::std(x, Axes{axes}).to_vector<double>(), sd, t);
      }
    }
}

TEST_CASE("logsumexp handles infinities and large values; var/std take int axes and integers") {
  auto l = logsumexp(array(std::vector<double>{1000, 1000, -INFINITY, -INFINITY, INFINITY, 1, NAN, 1}, {4, 2}), 1)
               .to_vector<double>();
  CHECK(l[0] == doctest::Approx(1000 + std::log(2.0)));
  CHECK(l[1] == -INFINITY);
  CHECK(l[2] == INFINITY);
  CHECK(std::isnan(l[3]));
  CHECK(logsumexp(zeros({3, 4})).item<float>() == doctest::Approx(std::log(12.0)));
  CHECK(logsumexp(array({1, 2}), 0).dtype() == DType::f32);
  Array xi = array({1, 2, 3, 4});
  CHECK(var(xi).item<float>() == doctest::Approx(1.25));
  CHECK(var(xi, 0, 1).item<float>() == doctest::Approx(5.0 / 3));
  CHECK(canopy::std(xi, 0, 0, true).shape() == Shape{1});
  CHECK(canopy::std(xi).item<float>() == doctest::Approx(std::sqrt(1.25)));
  CHECK_THROWS_AS(var(zeros({2, 3}), 2), ShapeError);
  CHECK_THROWS_AS(logsumexp(zeros({2, 3}), Axes{{0, 0}}), ShapeError);
  CHECK_THROWS_AS(canopy::std(zeros({2, 3}), -3), ShapeError);
}

TEST_CASE("log_softmax is the f64 reference rounded to f32, also with -inf entries and large magnitudes") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> rows = {
      {0.f, 0.f}, {1.f, 2.f, 3.f}, {-30.f, 0.f, 30.f}, {100.5f, 100.25f, -3.f}, {-inf, 0.f, 1.f}, {1e4f, -1e4f, 0.5f},
      {3.4e38f, 3.4e38f}, {-1e-7f, 1e-7f, 0.f, 2.5f}};
  for (const auto& v : rows) {
    CAPTURE(v.size());
    std::vector<float> got = nn::log_softmax(array(v, {static_cast<std::int64_t>(v.size())})).to_vector<float>();
    double m = -std::numeric_limits<double>::infinity(), s = 0;
    for (float f : v) m = std::max(m, static_cast<double>(f));
    for (float f : v) s += std::exp(static_cast<double>(f) - m);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const float want = static_cast<float>(static_cast<double>(v[i]) - m - std::log(s));
      CAPTURE(i);
      if (std::isinf(want)) CHECK(got[i] == want);
      else CHECK(std::abs(got[i] - want) <= std::abs(std::nextafter(want, inf) - want));
    }
  }
  Array batch = array({{0.f, 0.f}, {1.f, -1.f}});  // along the last axis of a matrix too
  CHECK(nn::log_softmax(batch).to_vector<float>()[0] == static_cast<float>(-std::log(2.0)));
}
