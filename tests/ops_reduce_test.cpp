// Reductions (sum/mean/max/min, reduce_*) against an f64 plain-loop reference over random shapes
// with size-0 and size-1 dims, every axis subset, keepdims; and the axis errors.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

using namespace canopy;

namespace {

Array random_array(const Shape& s, DType d, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-4, 4);
  std::vector<double> v(static_cast<std::size_t>(shape_size(s)));
  for (auto& x : v) x = is_floating(d) ? u(g) : std::floor(u(g));
  return array(v, s).astype(d);
}

enum class Kind { sum, max, min };

// Reference: for every input element, fold into the output index with reduced dims dropped.
std::vector<double> reference(const std::vector<double>& x, const Shape& s, const std::vector<bool>& red, Kind k) {
  std::int64_t nout = 1;
  for (std::size_t i = 0; i < s.size(); ++i) if (!red[i]) nout *= s[i];
  double init = k == Kind::sum ? 0 : (k == Kind::max ? -INFINITY : INFINITY);
  std::vector<double> out(static_cast<std::size_t>(nout), init);
  for (std::int64_t i = 0; i < shape_size(s); ++i) {
    std::int64_t rem = i, o = 0, stride = 1;
    for (std::size_t d = s.size(); d-- > 0;) {
      std::int64_t idx = rem % s[d];
      rem /= s[d];
      if (!red[d]) { o += idx * stride; stride *= s[d]; }
    }
    double& acc = out[static_cast<std::size_t>(o)];
    double v = x[static_cast<std::size_t>(i)];
    acc = k == Kind::sum ? acc + v : (k == Kind::max ? std::max(acc, v) : std::min(acc, v));
  }
  return out;
}

void check_all_axes(DType d, Kind k) {
  const Shape shapes[] = {{5}, {1}, {3, 4}, {2, 1, 5}, {4, 3, 2, 3}, {0, 3}, {3, 0, 2}, {700, 300}, {3, 5000}};
  unsigned seed = 1;
  for (const Shape& s : shapes) {
    Array x = random_array(s, d, seed++);
    auto xv = x.to_vector<double>();
    unsigned n = static_cast<unsigned>(s.size());
    for (unsigned mask = 1; mask < (1u << n); ++mask) {
      std::vector<int> axes;
      std::vector<bool> red(n);
      bool empty_reduced = false;
      for (unsigned i = 0; i < n; ++i)
        if (mask >> i & 1u) { axes.push_back(static_cast<int>(i)); red[i] = true; empty_reduced |= s[i] == 0; }
      if (k != Kind::sum && empty_reduced) continue;
      CAPTURE(to_string(s));
      CAPTURE(mask);
      Array y = k == Kind::sum ? sum(x, axes) : (k == Kind::max ? max(x, axes) : min(x, axes));
      auto want = reference(xv, s, red, k);
      auto got = y.to_vector<double>();
      REQUIRE(got.size() == want.size());
      double tol = d == DType::f32 ? 1e-5 * std::sqrt(static_cast<double>(shape_size(s)) + 1) : 1e-11;
      std::size_t bad = 0;
      for (std::size_t i = 0; i < got.size(); ++i)
        if (std::fabs(got[i] - want[i]) > tol * (1 + std::fabs(want[i]))) ++bad;
      CHECK(bad == 0);
    }
  }
}

}  // namespace

TEST_CASE("sum, max, min: every axis subset matches the reference") {
  for (DType d : {DType::f32, DType::f64, DType::i32}) {
    SUBCASE(std::string(name(d)).c_str()) {
      check_all_axes(d, Kind::sum);
      check_all_axes(d, Kind::max);
      check_all_axes(d, Kind::min);
    }
  }
}

TEST_CASE("reductions: all axes by default, keepdims, negative axes, mean") {
  Array x = array({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  CHECK(sum(x).item<float>() == 21.f);
  CHECK(sum(x).ndim() == 0);
  CHECK(sum(x, 0, true).shape() == Shape{1, 3});
  CHECK(sum(x, -1).to_vector<float>() == std::vector<float>{6, 15});
  CHECK(max(x, Axes{{0, 1}}, true).shape() == Shape{1, 1});
  CHECK(min(x, 1).to_vector<float>() == std::vector<float>{1, 4});
  CHECK(mean(x, 0).to_vector<float>() == std::vector<float>{2.5, 3.5, 4.5});
  CHECK(mean(array({1, 2})).dtype() == DType::f32);
  CHECK(std::isnan(mean(zeros({0})).item<float>()));
  CHECK(sum(zeros({0, 2})).item<float>() == 0.f);
  CHECK(sum(array(std::vector<bool>{true, true, false}, {3})).item<int>() == 2);
  CHECK(sum(x, Axes{std::vector<int>{}}).shape() == x.shape());
}

TEST_CASE("reductions: bad axes are ShapeErrors naming the op") {
  Array x = zeros({2, 3});
  CHECK_THROWS_AS(sum(x, 2), ShapeError);
  CHECK_THROWS_AS(sum(x, -3), ShapeError);
  CHECK_THROWS_AS(reduce_sum(x, {0, 0}), ShapeError);
  CHECK_THROWS_AS(max(zeros({0, 3}), 0), ShapeError);
  CHECK_THROWS_AS(reduce_sum(array(std::vector<bool>{true}, {1}), {0}), TypeError);
  try {
    (void)mean(x, 5);
  } catch (const ShapeError& e) {
    CHECK(std::string(e.what()).find("mean: axis (5)") == 0);
  }
}

TEST_CASE("all, any and array_equal follow jnp: truth of nonzero and NaN, empty reductions, shapes") {
  const Array x = array({{1.f, 0.f, 2.f}, {3.f, 4.f, 5.f}});
  CHECK(all(x).dtype() == DType::bool_);
  CHECK_FALSE(all(x).item<bool>());
  CHECK(any(x).item<bool>());
  CHECK(all(x, 1).to_vector<bool>() == std::vector<bool>{false, true});
  CHECK(any(x == 0.f, 0, true).shape() == Shape{1, 3});
  CHECK(any(x == 0.f, 0).to_vector<bool>() == std::vector<bool>{false, true, false});
  CHECK(all(array({std::nanf("")})).item<bool>());  // NaN is nonzero, hence true
  CHECK(all(zeros({0})).item<bool>());              // jnp.all([]) is True
  CHECK_FALSE(any(zeros({0})).item<bool>());        // jnp.any([]) is False
  CHECK(all(zeros({2, 0}), 1).to_vector<bool>() == std::vector<bool>{true, true});
  CHECK(any(array({0, 0, 7})).item<bool>());
  CHECK_THROWS_AS(all(x, 2), ShapeError);
  // Under vmap and jit they are ordinary reductions.
  CHECK(vmap([](const Array& r) { return all(r); })(x).to_vector<bool>() == std::vector<bool>{false, true});
  CHECK(jit([](const Array& r) { return any(r > 4.f); })(x).item<bool>());

  CHECK(array_equal(x, x).item<bool>());
  CHECK_FALSE(array_equal(x, x + 1.f).item<bool>());
  CHECK_FALSE(array_equal(x, reshape(x, {3, 2})).item<bool>());  // shapes differ: false, no error
  CHECK(array_equal(array({1, 2}), array({1.f, 2.f})).item<bool>());  // promoted, as jnp
  const Array nan = array({1.f, std::nanf("")});
  CHECK_FALSE(array_equal(nan, nan).item<bool>());
  CHECK(array_equal(nan, nan, true).item<bool>());
  CHECK(array_equal(zeros({0}), zeros({0})).item<bool>());
}

TEST_CASE("float sums of millions of elements keep f32 accuracy: one sum, long rows, long columns") {
  // Lane-wise accumulation over 2^24 elements lost 2e-4 relative; blocks summed in double keep
  // the error near f32 rounding of the result.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  const std::int64_t n = std::int64_t{1} << 24;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = u(rng);
  const Array x = array(v, {n});
  auto rel = [](double got, double want) { return std::abs(got - want) / std::abs(want); };
  double want = 0;
  for (float f : v) want += f;
  CHECK(rel(sum(x).item<float>(), want) < 1e-6);
  // The sum a jitted fused kernel takes as it goes, too.
  CHECK(rel(jit([](const Array& a) { return sum(a * 1.0f); })(x).item<float>(), want) < 1e-6);
  // Two rows of 2^23 and columns of 2^22 rows, eagerly and taken by a fused kernel.
  const Array rows = sum(reshape(x, {2, n / 2}), 1), cols = sum(reshape(x, {n / 4, 4}), 0);
  const Array jrows = jit([](const Array& a) { return sum(a * 1.0f, 1); })(reshape(x, {2, n / 2}));
  const Array jcols = jit([](const Array& a) { return sum(a * 1.0f, 0); })(reshape(x, {n / 4, 4}));
  for (int r = 0; r < 2; ++r) {
    double w = 0;
    for (std::int64_t i = 0; i < n / 2; ++i) w += v[static_cast<std::size_t>(r * (n / 2) + i)];
    CHECK(rel(rows.to_vector<float>()[static_cast<std::size_t>(r)], w) < 1e-6);
    CHECK(rel(jrows.to_vector<float>()[static_cast<std::size_t>(r)], w) < 1e-6);
  }
  for (int c = 0; c < 4; ++c) {
    double w = 0;
    for (std::int64_t i = 0; i < n / 4; ++i) w += v[static_cast<std::size_t>(i * 4 + c)];
    CHECK(rel(cols.to_vector<float>()[static_cast<std::size_t>(c)], w) < 1e-6);
    CHECK(rel(jcols.to_vector<float>()[static_cast<std::size_t>(c)], w) < 1e-6);
  }
}

TEST_CASE("float products of many factors are the exact product rounded once (multiplied in double)") {
  // 250,001 f32 factors near 1 multiplied in f32 drifted by 3e-4; in double the result is the
  // exact product of the f32 values, rounded to f32 once (as the GPU's, which multiplies in double).
  const Array x = 1.0f + random::normal(random::key(9), {2, 250001}) * 1e-6f;
  const std::vector<float> v = x.to_vector<float>();
  const std::vector<float> got = prod(x, 1).to_vector<float>();
  for (std::size_t r = 0; r < 2; ++r) {
    long double exact = 1;
    for (std::size_t j = 0; j < 250001; ++j) exact *= v[r * 250001 + j];
    const auto want = static_cast<float>(exact);
    CHECK(std::abs(got[r] - want) <= std::nextafter(want, 2.0f) - want);
  }
}
