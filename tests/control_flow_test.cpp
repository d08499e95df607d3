// cond, switch_, while_loop, fori_loop and scan: eager results, behaviour under vmap and
// under differentiation, and their errors.
#include <cmath>

#include <doctest/doctest.h>

#include <canopy/transforms.hpp>

using namespace canopy;

namespace {

void check_values(const Array& got, const std::vector<double>& want, double tol = 1e-6) {
  auto g = got.astype(DType::f64).to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    CHECK(g[i] == doctest::Approx(want[i]).epsilon(tol));
  }
}

}  // namespace

TEST_CASE("cond runs one branch for a concrete predicate and selects per lane under vmap") {
  auto f = [](const Array& x) {
    return cond(x > 0.0, [](const Array& v) { return v * 2.0; }, [](const Array& v) { return -v; }, x);
  };
  check_values(f(scalar(3.0)), {6.0});
  check_values(f(scalar(-3.0)), {3.0});
  check_values(vmap(f)(array({1.0, -2.0, 0.5})), {2.0, 2.0, 1.0});
  check_values(grad(f)(scalar(3.0)), {2.0});
  check_values(vmap(grad(f))(array({1.0, -2.0})), {2.0, -1.0});
}

TEST_CASE("cond under vmap with branches of different shapes is a TypeError naming the shapes") {
  auto f = [](const Array& x) {
    return cond(x > 0.0, [](const Array& v) { return stack({v, v}); }, [](const Array& v) { return stack({v, v, v}); }, x);
  };
  CHECK_THROWS_WITH_AS(vmap(f)(array({1.0, -1.0})), doctest::Contains("f64[3]"), TypeError);
  CHECK_THROWS_AS(cond(array({true, false}), [] { return 1; }, [] { return 2; }), TypeError);  // pred not scalar
}

TEST_CASE("switch_ clamps its index as jax does and selects per lane under vmap") {
  std::vector<std::function<Array(const Array&)>> branches{
      [](const Array& v) { return v + 1.0; }, [](const Array& v) { return v * 10.0; }, [](const Array& v) { return -v; }};
  Array x = scalar(2.0);
  check_values(switch_(scalar(1), branches, x), {20.0});
  check_values(switch_(scalar(7), branches, x), {-2.0});
  check_values(switch_(scalar(-3), branches, x), {3.0});
  auto f = [&](const Array& i, const Array& v) { return switch_(i, branches, v); };
  check_values(vmap(f)(array({0, 1, 2, 5}), array({1.0, 1.0, 1.0, 1.0})), {2.0, 10.0, -1.0, -1.0});
}

TEST_CASE("while_loop iterates until the predicate fails; under vmap lanes stop on their own") {
  auto halve_until_small = [](const Array& x) {
    return while_loop([](const std::pair<Array, Array>& c) { return c.first > 1.0; },
                      [](const std::pair<Array, Array>& c) { return std::make_pair(c.first / 2.0, c.second + 1); },
                      std::make_pair(x, scalar(0)));
  };
  auto [v, n] = halve_until_small(scalar(20.0));
  check_values(v, {0.625});
  CHECK(n.item<int>() == 5);
  auto [vs, ns] = vmap(halve_until_small)(array({20.0, 0.5, 3.0}));
  check_values(vs, {0.625, 0.5, 0.75});
  check_values(ns, {5, 0, 2});
}

TEST_CASE("while_loop is forward-differentiable; reverse mode raises the documented error") {
  auto cube_by_loop = [](const Array& x) {
    auto c = while_loop([](const std::pair<Array, Array>& s) { return s.second < 3; },
                        [&](const std::pair<Array, Array>& s) { return std::make_pair(s.first * x, s.second + 1); },
                        std::make_pair(ones_like(x), scalar(0)));
    return c.first;
  };
  auto [y, t] = jvp(cube_by_loop, std::make_tuple(scalar(2.0)), std::make_tuple(scalar(1.0)));
  check_values(y, {8.0});
  check_values(t, {12.0});
  CHECK_THROWS_WITH_AS(grad(cube_by_loop)(scalar(2.0)), doctest::Contains("while_loop: reverse-mode"), UnimplementedRule);
}

TEST_CASE("fori_loop with a static trip count differentiates in reverse mode") {
  auto power = [](const Array& x) {
    return fori_loop(0, 4, [&](const Array&, const Array& acc) { return acc * x; }, ones_like(x));
  };
  check_values(power(scalar(2.0)), {16.0});
  check_values(grad(power)(scalar(2.0)), {32.0});
  auto index_sum = fori_loop(0, 5, [](const Array& i, const Array& acc) { return acc + i; }, scalar(0));
  CHECK(index_sum.item<int>() == 10);
}

TEST_CASE("scan carries state, stacks outputs, runs in reverse and without xs") {
  Array xs = array({1.0, 2.0, 3.0, 4.0});
  auto cumsum = [](const Array& c, const Array& x) { return std::make_pair(c + x, c + x); };
  auto [total, partial] = scan(cumsum, scalar(0.0), xs);
  check_values(total, {10.0});
  check_values(partial, {1.0, 3.0, 6.0, 10.0});
  auto [rtotal, rpartial] = scan(cumsum, scalar(0.0), xs, -1, true);
  check_values(rtotal, {10.0});
  check_values(rpartial, {10.0, 9.0, 7.0, 4.0});
  auto counter = [](const Array& c, NoXs) { return std::make_pair(c + 1, c); };
  auto [n, seen] = scan(counter, scalar(0), NoXs{}, 3);
  CHECK(n.item<int>() == 3);
  check_values(seen, {0, 1, 2});
  CHECK_THROWS_AS(scan(cumsum, scalar(0.0), array({{1.0}, {2.0}}), 5), ShapeError);
}

TEST_CASE("gradients through a 100-step scan RNN match finite differences") {
  const int steps = 100;
  Array xs = reshape(sin(arange(0.0, 2.0 * steps, 1.0, DType::f64) * 0.1), {steps, 2});
  auto loss = [&](const Array& w) {
    auto cell = [&](const Array& h, const Array& x) {
      Array next = tanh(matmul(w, h) + x);
      return std::make_pair(next, sum(next));
    };
    auto [h, ys] = scan(cell, zeros({2}, DType::f64), xs);
    return sum(ys) + sum(h * h);
  };
  Array w = array({{0.5, -0.3}, {0.2, 0.4}});
  Array g = grad(loss)(w);
  auto wv = w.to_vector<double>();
  auto gv = g.to_vector<double>();
  for (std::size_t i = 0; i < 4; ++i) {
    const double h = 1e-6;
    auto plus = wv, minus = wv;
    plus[i] += h;
    minus[i] -= h;
    double fd = (loss(array(plus, {2, 2})).item<double>() - loss(array(minus, {2, 2})).item<double>()) / (2 * h);
    CHECK(gv[i] == doctest::Approx(fd).epsilon(1e-6));
  }
}

TEST_CASE("scan under vmap maps over a batch of sequences") {
  Array xs = array({{1.0, 2.0, 3.0}, {10.0, 20.0, 30.0}});
  auto total = [](const Array& seq) {
    return scan([](const Array& c, const Array& x) { return std::make_pair(c + x, c * x); }, scalar(0.0), seq).first;
  };
  check_values(vmap(total)(xs), {6.0, 60.0});
}

TEST_CASE("scan over xs whose leaves disagree in length names the leaf") {
  auto step = [](const Array& c, const std::pair<Array, Array>& x) { return std::make_pair(c + x.first + sum(x.second), c); };
  const std::pair<Array, Array> xs{zeros({4}), zeros({3, 2})};
  CHECK_THROWS_WITH_AS(scan(step, scalar(0.f), xs), doctest::Contains("scan: xs (xs[1]) f32[3,2] has leading axis 3 but the length is 4"), ShapeError);
}
