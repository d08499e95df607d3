// jacfwd, jacrev, hessian, linearize and stop_gradient against closed forms.
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

// f(x) = sin(x) * sum(x): J[i][j] = cos(x_i) s [i == j] + sin(x_i).
Array f(const Array& x) { return sin(x) * sum(x); }

std::vector<double> jacobian_of_f(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  std::vector<double> j;
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t k = 0; k < x.size(); ++k) j.push_back((i == k ? std::cos(x[i]) * s : 0.0) + std::sin(x[i]));
  return j;
}

Array rosenbrock(const Array& p) {
  Array a = sum(p * array({1.0, 0.0})), b = sum(p * array({0.0, 1.0}));
  return square(1.0 - a) + 100.0 * square(b - a * a);
}

}  // namespace

TEST_CASE("jacfwd and jacrev give the Jacobian with shape out + in") {
  std::vector<double> xv{0.3, -1.2, 2.0};
  Array x = array({0.3, -1.2, 2.0});
  Array jf = jacfwd(f)(x), jr = jacrev(f)(x);
  CHECK(jf.shape() == Shape{3, 3});
  CHECK(jr.shape() == Shape{3, 3});
  check_values(jf, jacobian_of_f(xv));
  check_values(jr, jacobian_of_f(xv));
  // Matrix input, vector output: shape [2, 2, 3].
  Array m = array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  auto rowsum = [](const Array& a) { return sum(a * a, 1); };
  Array jm = jacrev(rowsum)(m);
  CHECK(jm.shape() == Shape{2, 2, 3});
  check_values(jm, {2, 4, 6, 0, 0, 0, 0, 0, 0, 8, 10, 12});
  check_values(jacfwd(rowsum)(m), jm.astype(DType::f64).to_vector<double>());
}

TEST_CASE("hessian of the Rosenbrock function matches its closed form") {
  double x = 0.5, y = -0.25;
  Array h = hessian(rosenbrock)(array({x, y}));
  CHECK(h.shape() == Shape{2, 2});
  check_values(h, {2 - 400 * (y - x * x) + 800 * x * x, -400 * x, -400 * x, 200});
}

TEST_CASE("linearize evaluates f once and its jvp function agrees with jvp") {
  Array x = array({0.3, -1.2, 2.0});
  auto [y, f_jvp] = linearize(f, x);
  check_values(y, f(x).astype(DType::f64).to_vector<double>());
  Array t = array({1.0, 0.5, -2.0});
  auto [y2, want] = jvp(f, std::make_tuple(x), std::make_tuple(t));
  check_values(f_jvp(t), want.astype(DType::f64).to_vector<double>());
  check_values(f_jvp(t * 2.0), (want * 2.0).astype(DType::f64).to_vector<double>());
  CHECK_THROWS_AS(f_jvp(array({1.0, 2.0})), ShapeError);
}

TEST_CASE("stop_gradient blocks the gradient but not the value") {
  auto g = grad([](const Array& x) { return sum(x * stop_gradient(x)); });
  Array x = array({1.0, -2.0});
  check_values(g(x), {1.0, -2.0});  // d/dx (x * c) with c = x held constant
  check_values(stop_gradient(x), {1.0, -2.0});
}

namespace {
template <class T>
struct Affine {  // a template over its leaf type, so a Jacobian of Affines can hold Affines
  T w, b;
};
}  // namespace

TEST_CASE("jacrev and jacfwd of a loss of a struct give that struct of gradients, as grad does") {
  const Affine<Array> p{array({{0.5, -1.0}, {2.0, 0.25}}), array({0.1, -0.3})};
  const Array x = array({1.5, -2.0});
  auto loss = [&](const Affine<Array>& q) { return sum(tanh(matmul(x, q.w) + q.b)); };
  const Affine<Array> g = grad(loss)(p);
  const Affine<Array> jr = jacrev(loss)(p), jf = jacfwd(loss)(p);
  check_values(jr.w, g.w.to_vector<double>());
  check_values(jr.b, g.b.to_vector<double>());
  check_values(jf.w, g.w.to_vector<double>());
  check_values(jf.b, g.b.to_vector<double>());
  CHECK(jr.w.shape() == Shape{2, 2});
}

TEST_CASE("a pytree output gives one Jacobian per output leaf; a pytree input one block per input leaf") {
  const Array x = array({0.3, -1.2, 2.0});
  auto two = [](const Array& v) { return std::vector<Array>{f(v), sum(v * v)}; };
  const std::vector<Array> jr = jacrev(two)(x), jf = jacfwd(two)(x);
  REQUIRE(jr.size() == 2);
  check_values(jr[0], jacobian_of_f({0.3, -1.2, 2.0}));
  check_values(jf[0], jacobian_of_f({0.3, -1.2, 2.0}));
  check_values(jr[1], {0.6, -2.4, 4.0});
  check_values(jf[1], {0.6, -2.4, 4.0});
  // Input {a, b}, output a * b (elementwise): d/da = diag(b), d/db = diag(a).
  auto prod = [](const Affine<Array>& q) { return q.w * q.b; };
  const Affine<Array> q{array({1.0, 2.0}), array({3.0, 4.0})};
  for (const Affine<Array>& j : {jacrev(prod)(q), jacfwd(prod)(q)}) {
    check_values(j.w, {3, 0, 0, 4});
    check_values(j.b, {1, 0, 0, 2});
  }
}

TEST_CASE("hessian of a function of a struct is a struct of structs of blocks") {
  // h(a, b) = sum(a^2 * b): d2/da2 = diag(2b), d2/dadb = diag(2a), d2/db2 = 0.
  auto h = [](const Affine<Array>& q) { return sum(q.w * q.w * q.b); };
  const Affine<Array> q{array({1.0, -2.0}), array({0.5, 3.0})};
  const Affine<Affine<Array>> hs = hessian(h)(q);
  check_values(hs.w.w, {1, 0, 0, 6});
  check_values(hs.w.b, {2, 0, 0, -4});
  check_values(hs.b.w, {2, 0, 0, -4});
  check_values(hs.b.b, {0, 0, 0, 0});
}
