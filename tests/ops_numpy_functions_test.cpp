// jax.numpy's elementwise functions, cumulative reductions and array helpers against values
// numpy computes (numpy 1.24, float64, printed to 17 digits), with JAX's dtype rules and JAX's
// definitions where jnp differs from numpy; plus their derivatives and batching.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

using namespace canopy;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Relative closeness; NaN matches NaN and infinities match exactly.
bool close(double got, double want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

void check_values(const Array& got, const std::vector<double>& want, double tol, const std::string& what) {
  CAPTURE(what);
  REQUIRE(got.size() == static_cast<std::int64_t>(want.size()));
  const std::vector<double> g = got.to_vector<double>();
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CAPTURE(g[i]);
    CAPTURE(want[i]);
    CHECK(close(g[i], want[i], tol));
  }
}

/// f on x in f64 (to within 4e-15) and f32 (to within 4 f32 ulps, as the f32 transcendental functions
/// are), eagerly and jitted.
void check_unary(const char* name, Array (*f)(const Array&), const std::vector<double>& x, const std::vector<double>& want) {
  const Array x64 = array(x, {static_cast<std::int64_t>(x.size())});
  const Array x32 = array(std::vector<float>(x.begin(), x.end()), {static_cast<std::int64_t>(x.size())});
  check_values(f(x64), want, 4e-15, std::string(name) + " f64");
  check_values(f(x32), want, 5e-7, std::string(name) + " f32");
  check_values(jit(f)(x32), want, 5e-7, std::string(name) + " f32 jitted");
  CHECK(f(x64).dtype() == DType::f64);
  CHECK(f(x32).dtype() == DType::f32);
}

Array f64(const std::vector<double>& v) { return array(v, {static_cast<std::int64_t>(v.size())}); }

}  // namespace

TEST_CASE("numpy functions: inverse trigonometric and hyperbolic functions, cbrt, log2, log10, exp2") {
  check_unary("arcsin", arcsin, {-1.0, -0.9, -0.5, 0.0, 0.3, 0.75, 1.0, 1.5},
              {-1.5707963267948966, -1.1197695149986342, -0.5235987755982989, 0.0, 0.30469265401539747,
               0.8480620789814809, 1.5707963267948966, kNaN});
  check_unary("arccos", arccos, {-1.0, -0.9, -0.5, 0.0, 0.3, 0.75, 1.0, 1.5},
              {3.141592653589793, 2.6905658417935308, 2.0943951023931957, 1.5707963267948966, 1.266103672779499,
               0.7227342478134157, 0.0, kNaN});
  check_unary("arctan", arctan, {-kInf, -3.0, -0.5, 0.0, 0.7, 2.5, 1e10},
              {-1.5707963267948966, -1.2490457723982544, -0.4636476090008061, 0.0, 0.6107259643892086,
               1.1902899496825317, 1.5707963266948965});
  check_unary("arcsinh", arcsinh, {-3.0, -0.5, 0.0, 0.7, 2.5, 1e10},
              {-1.8184464592320668, -0.48121182505960347, 0.0, 0.6526665660823557, 1.6472311463710958, 23.7189981105004});
  check_unary("arccosh", arccosh, {0.5, 1.0, 1.5, 3.0, 10.0, 1e10},
              {kNaN, 0.0, 0.9624236501192069, 1.762747174039086, 2.993222846126381, 23.7189981105004});
  check_unary("arctanh", arctanh, {-1.0, -0.9, -0.5, 0.0, 0.3, 0.75, 1.0, 1.5},
              {-kInf, -1.4722194895832204, -0.5493061443340549, 0.0, 0.3095196042031117, 0.9729550745276566, kInf, kNaN});
  check_unary("sinh", sinh, {-3.0, -0.5, 0.0, 0.7, 2.5, 20.0},
              {-10.017874927409903, -0.5210953054937474, 0.0, 0.7585837018395335, 6.0502044810397875,
               242582597.70489514});
  check_unary("cosh", cosh, {-3.0, -0.5, 0.0, 0.7, 2.5, 20.0},
              {10.067661995777764, 1.1276259652063807, 1.0, 1.255169005630943, 6.132289479663686, 242582597.70489514});
  check_unary("cbrt", cbrt, {-27.0, -0.5, 0.0, 0.7, 8.0, 1e10},
              {-3.0, -0.7937005259840998, 0.0, 0.8879040017426006, 2.0, 2154.4346900318833});
  check_unary("log2", log2, {0.0, 0.5, 1.0, 3.0, 1024.0, 1e-3, -1.0},
              {-kInf, -1.0, 0.0, 1.584962500721156, 10.0, -9.965784284662087, kNaN});
  check_unary("log10", log10, {0.0, 0.5, 1.0, 3.0, 1000.0, 1e-3, -1.0},
              {-kInf, -0.3010299956639812, 0.0, 0.47712125471966244, 3.0, -3.0, kNaN});
  check_unary("exp2", exp2, {-3.0, -0.5, 0.0, 0.7, 10.0}, {0.125, 0.7071067811865476, 1.0, 1.624504792712471, 1024.0});
  check_unary("deg2rad", deg2rad, {-180.0, 0, 45.0, 90.0, 360.0},
              {-3.141592653589793, 0.0, 0.7853981633974483, 1.5707963267948966, 6.283185307179586});
  check_unary("rad2deg", rad2deg, {-3.141592653589793, 0, 0.5, 1.0}, {-180.0, 0.0, 28.64788975654116, 57.29577951308232});
  check_unary("trunc", trunc, {-2.7, -0.5, 0.5, 2.7, 1e20}, {-2.0, -0.0, 0.0, 2.0, 1e20});
  // The lax names are jnp's array-API names too; sin/cos-style functions promote integers to f32.
  CHECK(asin(array({0, 1})).dtype() == DType::f32);
  CHECK(radians(array({180.0})).item<double>() == doctest::Approx(M_PI));
  CHECK(degrees(array({M_PI})).item<double>() == doctest::Approx(180.0));
  CHECK(std::signbit(trunc(array({-0.5})).item<double>()));
  CHECK(trunc(array({-7, 7})).dtype() == DType::i32);  // integers unchanged
}

TEST_CASE("numpy functions: floor_divide, divmod, mod, fmod on floats and integers") {
  const Array x = f64({7.5, -7.5, 7.5, -7.5, 0.0, 5.0, 1e300, 3.0});
  const Array y = f64({2.0, 2.0, -2.0, -2.0, 3.0, 0.0, 1e-300, kInf});
  const std::vector<double> fd{3.0, -4.0, -4.0, 3.0, 0.0, kInf, kInf, 0.0};
  const std::vector<double> md{1.5, 0.5, -0.5, -1.5, 0.0, kNaN, 4.891554850853602e-301, 3.0};
  check_values(floor_divide(x, y), fd, 0, "floor_divide f64");
  check_values(mod(x, y), md, 1e-15, "mod f64");
  check_values(fmod(x, y), {1.5, -1.5, 1.5, -1.5, 0.0, kNaN, 4.891554850853602e-301, 3.0}, 1e-15, "fmod f64");
  auto [q, r] = divmod(x, y);
  check_values(q, fd, 0, "divmod quotient");
  check_values(r, md, 1e-15, "divmod remainder");
  // f32, and a weak scalar divisor keeps the array's dtype: the Collatz step n // 2.
  CHECK(floor_divide(array({7.5f, -7.5f}), 2).to_vector<float>() == std::vector<float>{3, -4});
  CHECK(floor_divide(array({7.5f}), 2).dtype() == DType::f32);
  const Array xi = array({7, -7, 7, -7, 0, 5, -1}), yi = array({2, 2, -2, -2, 3, 3, 4});
  CHECK(floor_divide(xi, yi).to_vector<int>() == std::vector<int>{3, -4, -4, 3, 0, 1, -1});
  CHECK(mod(xi, yi).to_vector<int>() == std::vector<int>{1, 1, -1, -1, 0, 2, 3});
  CHECK(fmod(xi, yi).to_vector<int>() == std::vector<int>{1, -1, 1, -1, 0, 2, -1});
  auto [qi, ri] = divmod(xi, yi);
  CHECK(qi.to_vector<int>() == std::vector<int>{3, -4, -4, 3, 0, 1, -1});
  CHECK(ri.to_vector<int>() == std::vector<int>{1, 1, -1, -1, 0, 2, 3});
  CHECK(floor_divide(xi, 2).dtype() == DType::i32);
  CHECK(floor_divide(array({27}), 2).to_vector<int>() == std::vector<int>{13});
  CHECK(floor_divide(2, array({7u})).dtype() == DType::u32);
  CHECK(floor_divide(array({7u, 9u}), array({2u, 4u})).to_vector<unsigned>() == std::vector<unsigned>{3, 2});
  // bool operands become i32, as jnp's promote_args_numeric makes them.
  CHECK(floor_divide(array({true, true}), array({true, true})).dtype() == DType::i32);
  // true_divide is divide.
  CHECK(true_divide(array({1, 2}), array({2, 2})).to_vector<float>() == std::vector<float>{0.5f, 1.f});
}

TEST_CASE("numpy functions: hypot, logaddexp and copysign, with their edge values") {
  check_values(hypot(f64({3.0, 0.0, 1e300, -1e300, kInf, 5.0, kNaN}), f64({4.0, 0.0, 1e300, 2.0, 1.0, -kInf, 1.0})),
               {5.0, 0.0, 1.4142135623730952e+300, 1e+300, kInf, kInf, kNaN}, 1e-15, "hypot");
  check_values(hypot(array({3.f, 1e30f}), array({4.f, 1e30f})), {5.0, 1.4142135623730951e30}, 2e-7, "hypot f32");
  check_values(logaddexp(f64({0.0, 1.0, -kInf, 1000.0, -1000.0, 2.0, kInf, kNaN}),
                         f64({0.0, 2.0, -kInf, 1000.0, -999.0, -kInf, kInf, 0.0})),
               {0.6931471805599453, 2.313261687518223, -kInf, 1000.6931471805599, -998.6867383124818, 2.0, kInf, kNaN},
               1e-15, "logaddexp");
  check_values(copysign(f64({1.0, -2.0, 3.0, -0.0, kInf, 5.0}), f64({-1.0, 1.0, -0.0, -3.0, -1.0, kNaN})),
               {-1.0, 2.0, -3.0, -0.0, -kInf, 5.0}, 0, "copysign");
  CHECK(std::signbit(copysign(array({0.0}), array({-0.0})).item<double>()));
  CHECK(copysign(array({1, 2}), -1).dtype() == DType::f32);  // promoted to a float, as jnp
  CHECK(hypot(array({3}), array({4})).item<float>() == 5.f);
  CHECK(logaddexp(array({1.f}), 1).item<float>() == doctest::Approx(1.6931472f));
}

TEST_CASE("numpy functions: signbit, isnan, isinf, isposinf, isneginf and nan_to_num") {
  const Array x = f64({1.0, -1.0, 0.0, -0.0, kInf, -kInf, kNaN, -kNaN});
  CHECK(signbit(x).to_vector<bool>() == std::vector<bool>{false, true, false, true, false, true, false, true});
  CHECK(signbit(array({-0.0f, 2.f})).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK(signbit(array({-0.0f}).astype(DType::f16)).to_vector<bool>() == std::vector<bool>{true});
  CHECK(signbit(array({-3, 0, 4})).to_vector<bool>() == std::vector<bool>{true, false, false});
  CHECK(signbit(array({true})).to_vector<bool>() == std::vector<bool>{false});
  CHECK(isnan(x).to_vector<bool>() == std::vector<bool>{false, false, false, false, false, false, true, true});
  CHECK(isinf(x).to_vector<bool>() == std::vector<bool>{false, false, false, false, true, true, false, false});
  CHECK(isposinf(x).to_vector<bool>() == std::vector<bool>{false, false, false, false, true, false, false, false});
  CHECK(isneginf(x).to_vector<bool>() == std::vector<bool>{false, false, false, false, false, true, false, false});
  CHECK(isinf(array({1, 2})).to_vector<bool>() == std::vector<bool>{false, false});
  CHECK(isnan(array({1, 2})).dtype() == DType::bool_);
  const Array y = array({NAN, INFINITY, -INFINITY, 1.5f});
  CHECK(nan_to_num(y).to_vector<float>() ==
        std::vector<float>{0.f, std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(), 1.5f});
  CHECK(nan_to_num(f64({kNaN, kInf, -kInf, 1.5}), -1.0, 9.0, -9.0).to_vector<double>() ==
        std::vector<double>{-1.0, 9.0, -9.0, 1.5});
  CHECK(nan_to_num(array({NAN}).astype(DType::f16), 0.0, std::nullopt).dtype() == DType::f16);
  CHECK(nan_to_num(array({INFINITY}).astype(DType::f16)).to_vector<float>() == std::vector<float>{65504.f});
  CHECK(nan_to_num(array({3})).to_vector<int>() == std::vector<int>{3});
}

TEST_CASE("numpy functions: clip, absolute, fabs, rint, positive") {
  CHECK(clip(array({-3, 0, 5, 12}), 0, 10).to_vector<int>() == std::vector<int>{0, 0, 5, 10});
  CHECK(clip(array({-3, 0, 5, 12}), 0, 10).dtype() == DType::i32);  // weak bounds keep the dtype
  CHECK(clip(array({-3.f, 5.f}), none, 1).to_vector<float>() == std::vector<float>{-3.f, 1.f});
  CHECK(clip(array({-3.f, 5.f}), 0, none).to_vector<float>() == std::vector<float>{0.f, 5.f});
  CHECK(clip(array({-3.f, 5.f, 2.f}), array({0.f, 0.f, 3.f}), array({1.f})).to_vector<float>() ==
        std::vector<float>{0.f, 1.f, 1.f});  // array bounds broadcast
  CHECK(std::isnan(clip(array({NAN}), 0, 1).item<float>()));
  CHECK(clip(array({2.f})).item<float>() == 2.f);
  CHECK(absolute(array({-3, 4})).to_vector<int>() == std::vector<int>{3, 4});
  CHECK(absolute(array({3u})).dtype() == DType::u32);
  CHECK(fabs(array({-3, 4})).to_vector<float>() == std::vector<float>{3.f, 4.f});
  CHECK(positive(array({-3})).to_vector<int>() == std::vector<int>{-3});
}

TEST_CASE("numpy functions: cumsum and cumprod with jnp's axis and dtype, and lax's direction") {
  const Array m = array({{1, 2, 3}, {4, 5, 6}});
  CHECK(cumsum(m).to_vector<int>() == std::vector<int>{1, 3, 6, 10, 15, 21});  // flattened
  CHECK(cumsum(m).shape() == Shape{6});
  CHECK(cumsum(m, 1).to_vector<int>() == std::vector<int>{1, 3, 6, 4, 9, 15});
  CHECK(cumsum(m, 0).to_vector<int>() == std::vector<int>{1, 2, 3, 5, 7, 9});
  CHECK(cumsum(m, -1).to_vector<int>() == std::vector<int>{1, 3, 6, 4, 9, 15});
  CHECK(cumsum(m, 1, DType::f32).dtype() == DType::f32);
  CHECK(cumprod(array({1.5, -2.0, 0.5, 4.0})).to_vector<double>() == std::vector<double>{1.5, -3.0, -1.5, -6.0});
  // bool accumulates in the default int; narrow integers keep their dtype (and wrap), as in JAX.
  CHECK(cumsum(array({true, true, false, true})).to_vector<int>() == std::vector<int>{1, 2, 2, 3});
  CHECK(cumsum(array({true})).dtype() == DType::i32);
  CHECK(cumsum(array({100, 100}).astype(DType::i8)).to_vector<int>() == std::vector<int>{100, -56});
  CHECK(cumsum(array({100, 100}).astype(DType::i8)).dtype() == DType::i8);
  CHECK(cumsum(array({2, -2, 0}), std::nullopt, DType::bool_).to_vector<bool>() == std::vector<bool>{true, true, true});
  CHECK(cumprod(array({2, 0, 3}), std::nullopt, DType::bool_).to_vector<bool>() == std::vector<bool>{true, false, false});
  // lax's forms: an axis and a direction.
  CHECK(cumsum(m, 1, true).to_vector<int>() == std::vector<int>{6, 5, 3, 15, 11, 6});
  CHECK(cumprod(m, 0, true).to_vector<int>() == std::vector<int>{4, 10, 18, 4, 5, 6});
  CHECK(cummax(array({1.f, 3.f, 2.f, 5.f, 4.f})).to_vector<float>() == std::vector<float>{1, 3, 3, 5, 5});
  CHECK(cummin(array({3, 1, 2, 0, 4})).to_vector<int>() == std::vector<int>{3, 1, 1, 0, 0});
  CHECK(cummax(array({1, 3, 2, 5, 4}), 0, true).to_vector<int>() == std::vector<int>{5, 5, 5, 5, 4});
  CHECK(cummin(m, 1, true).to_vector<int>() == std::vector<int>{1, 2, 3, 4, 5, 6});
  const auto nan_max = cummax(array({1.f, NAN, 5.f})).to_vector<float>();  // a NaN stays
  CHECK(nan_max[0] == 1.f);
  CHECK(std::isnan(nan_max[1]));
  CHECK(std::isnan(nan_max[2]));
  // Long axes and many columns (the threaded kernel) against a running sum here.
  const Array big = arange(0.0, 4096.0, 1.0, DType::f64).reshape({64, 64});
  const auto along0 = cumsum(big, 0).to_vector<double>(), along1 = cumsum(big, 1).to_vector<double>();
  CHECK(along0[63 * 64 + 5] == doctest::Approx(64.0 * 5 + 64.0 * 63 * 64 / 2));
  CHECK(along1[7 * 64 + 63] == doctest::Approx(7.0 * 64 * 64 + 63.0 * 64 / 2));
  CHECK(jit([](const Array& a) { return cumsum(a, 1); })(big).to_vector<double>() == along1);
}

TEST_CASE("numpy functions: cumulative reductions differentiate and batch as JAX's rules say") {
  // d/dx of sum(cumsum(x)) is (n, n-1, ..., 1); of sum(cumprod(x)) at x with a zero it stays exact.
  const Array x = array({1.0, 2.0, 3.0});
  CHECK(grad([](const Array& v) { return sum(cumsum(v)); })(x).to_vector<double>() == std::vector<double>{3, 2, 1});
  CHECK(grad([](const Array& v) { return sum(cumsum(v, 0, true)); })(x).to_vector<double>() ==
        std::vector<double>{1, 2, 3});
  // cumprod([a, b, c]) = [a, ab, abc]: the gradient of the sum is [1 + b + bc, a + ac, ab].
  const Array z = array({2.0, 0.0, 3.0});
  CHECK(grad([](const Array& v) { return sum(cumprod(v)); })(z).to_vector<double>() == std::vector<double>{1, 8, 0});
  // cummax: each element's derivative goes to the element holding the running maximum.
  CHECK(grad([](const Array& v) { return sum(cummax(v)); })(array({1.0, 3.0, 2.0, 5.0})).to_vector<double>() ==
        std::vector<double>{1, 2, 0, 1});
  CHECK(grad([](const Array& v) { return sum(cummin(v, 0, true)); })(array({1.0, 3.0, 2.0, 5.0})).to_vector<double>() ==
        std::vector<double>{1, 0, 2, 1});
  // vmap over rows equals the op along axis 1.
  const Array m = array({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  CHECK(vmap([](const Array& r) { return cumsum(r); })(m).to_vector<float>() == cumsum(m, 1).to_vector<float>());
  CHECK(vmap([](const Array& r) { return cummax(r, 0, true); }, in_axes(1))(m).to_vector<float>() ==
        transpose(cummax(m, 0, true)).to_vector<float>());
}

TEST_CASE("numpy functions: diff, outer, tile, repeat and roll") {
  CHECK(diff(array({1, 4, 9, 16, 25})).to_vector<int>() == std::vector<int>{3, 5, 7, 9});
  CHECK(diff(array({1, 4, 9, 16, 25}), 2).to_vector<int>() == std::vector<int>{2, 2, 2});
  CHECK(diff(array({{1, 3, 6}, {10, 15, 21}}), 1, 0).to_vector<int>() == std::vector<int>{9, 12, 15});
  CHECK(diff(array({1., 4., 9.}), 1, -1, scalar(0.0), array({20.0})).to_vector<double>() ==
        std::vector<double>{1, 3, 5, 11});
  CHECK(diff(array({true, true, false})).to_vector<bool>() == std::vector<bool>{false, true});  // != on bool
  CHECK(diff(array({1, 2}), 0).to_vector<int>() == std::vector<int>{1, 2});
  CHECK_THROWS_AS(diff(scalar(1.f)), ShapeError);
  CHECK_THROWS_AS(diff(array({1.f}), -1), ShapeError);

  const Array o = outer(array({1, 2, 3}), array({{1, 0}, {-1, 2}}));
  CHECK(o.shape() == Shape{3, 4});
  CHECK(o.to_vector<int>() == std::vector<int>{1, 0, -1, 2, 2, 0, -2, 4, 3, 0, -3, 6});
  CHECK(outer(array({1}), array({0.5f})).dtype() == DType::f32);

  CHECK(tile(array({{1, 2}, {3, 4}}), {2, 3}).to_vector<int>() ==
        std::vector<int>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  CHECK(tile(array({1, 2, 3}), {2, 2}).shape() == Shape{2, 6});
  CHECK(tile(array({1, 2, 3}), {2, 2}).to_vector<int>() == std::vector<int>{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3});
  CHECK(tile(array({{1, 2}, {3, 4}}), 2).shape() == Shape{2, 4});
  CHECK(tile(array({1, 2}), 0).shape() == Shape{0});
  CHECK_THROWS_AS(tile(array({1}), -1), ShapeError);

  const Array m = array({{1, 2}, {3, 4}});
  CHECK(repeat(m, 2).to_vector<int>() == std::vector<int>{1, 1, 2, 2, 3, 3, 4, 4});
  CHECK(repeat(m, {1, 2}, 0).to_vector<int>() == std::vector<int>{1, 2, 3, 4, 3, 4});
  CHECK(repeat(m, {0, 3}, 1).to_vector<int>() == std::vector<int>{2, 2, 2, 4, 4, 4});
  CHECK(repeat(m, 2, 1).shape() == Shape{2, 4});
  CHECK(repeat(scalar(7), 3).to_vector<int>() == std::vector<int>{7, 7, 7});
  CHECK_THROWS_AS(repeat(m, {1, 2, 3}, 0), ShapeError);

  const Array r = arange(10).reshape({2, 5});
  CHECK(roll(r, 2).to_vector<int>() == std::vector<int>{8, 9, 0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(roll(r, -1, 1).to_vector<int>() == std::vector<int>{1, 2, 3, 4, 0, 6, 7, 8, 9, 5});
  CHECK(roll(r, {1, 2}, {0, 1}).to_vector<int>() == std::vector<int>{8, 9, 5, 6, 7, 3, 4, 0, 1, 2});
  CHECK(roll(r, 12, 1).to_vector<int>() == roll(r, 2, 1).to_vector<int>());
  CHECK(roll(zeros({0}), 3).shape() == Shape{0});
}

TEST_CASE("numpy functions: tril, triu, diagonal and trace") {
  const Array m = arange(1, 13, 1, DType::i32).reshape({3, 4});
  CHECK(tril(m).to_vector<int>() == std::vector<int>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0});
  CHECK(tril(m, -1).to_vector<int>() == std::vector<int>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  CHECK(tril(m, 1).to_vector<int>() == std::vector<int>{1, 2, 0, 0, 5, 6, 7, 0, 9, 10, 11, 12});
  CHECK(triu(m).to_vector<int>() == std::vector<int>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  CHECK(triu(m, 1).to_vector<int>() == std::vector<int>{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  CHECK(triu(m, -1).to_vector<int>() == std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12});
  CHECK(tril(stack({m, m})).shape() == Shape{2, 3, 4});  // a stack of matrices
  CHECK_THROWS_AS(tril(array({1, 2})), ShapeError);

  const Array t = arange(24).reshape({2, 3, 4});
  CHECK(diagonal(m).to_vector<int>() == std::vector<int>{1, 6, 11});
  CHECK(diagonal(m, 1).to_vector<int>() == std::vector<int>{2, 7, 12});
  CHECK(diagonal(m, -1).to_vector<int>() == std::vector<int>{5, 10});
  CHECK(diagonal(m, 5).shape() == Shape{0});
  CHECK(diagonal(t, 0, 1, 2).to_vector<int>() == std::vector<int>{0, 5, 10, 12, 17, 22});
  CHECK(diagonal(t, 0, 1, 2).shape() == Shape{2, 3});
  CHECK(diagonal(t, 1, 0, 2).to_vector<int>() == std::vector<int>{1, 14, 5, 18, 9, 22});
  CHECK(diagonal(t, 1, 0, 2).shape() == Shape{3, 2});

  CHECK(trace(m).item<int>() == 18);
  CHECK(trace(m, 1).item<int>() == 21);
  CHECK(trace(m, -2).item<int>() == 9);
  CHECK(trace(t, 0, 1, 2).to_vector<int>() == std::vector<int>{15, 51});
  CHECK(trace(t, 0, 0, 1).to_vector<int>() == std::vector<int>{16, 18, 20, 22});
  CHECK(trace(m, 0, 0, 1, DType::f32).dtype() == DType::f32);
  CHECK_THROWS_AS(trace(m, 0, 1, -1), ShapeError);
  // Differentiable: d trace(A) / dA is the identity.
  CHECK(grad([](const Array& a) { return trace(a); })(eye(3)).to_vector<float>() == eye(3).to_vector<float>());
  CHECK(grad([](const Array& a) { return sum(diagonal(a, 1)); })(zeros({2, 3})).to_vector<float>() ==
        std::vector<float>{0, 1, 0, 0, 0, 1});
}

TEST_CASE("numpy functions: derivatives of the compositions are JAX's") {
  auto d = [](auto f, double at) { return grad([&](const Array& v) { return sum(f(v)); })(array({at})).template item<double>(); };
  CHECK(d([](const Array& v) { return arcsin(v); }, 0.5) == doctest::Approx(1 / std::sqrt(0.75)));
  CHECK(d([](const Array& v) { return arccosh(v); }, 2.0) == doctest::Approx(1 / std::sqrt(3.0)));
  CHECK(d([](const Array& v) { return cbrt(v); }, 8.0) == doctest::Approx(1.0 / 12));
  CHECK(d([](const Array& v) { return log2(v); }, 2.0) == doctest::Approx(1 / (2 * std::log(2.0))));
  CHECK(d([](const Array& v) { return hypot(v, array({4.0})); }, 3.0) == doctest::Approx(0.6));
  // logaddexp's custom rule: 1/2 each at a tie, 0 (not NaN) for a -inf operand.
  CHECK(d([](const Array& v) { return logaddexp(v, array({1.0})); }, 1.0) == doctest::Approx(0.5));
  CHECK(d([](const Array& v) { return logaddexp(v, array({-kInf})); }, 1.0) == doctest::Approx(1.0));
  CHECK(grad([](const Array& v) { return sum(logaddexp(v, array({0.0}))); })(array({-kInf})).item<double>() == 0.0);
  CHECK(d([](const Array& v) { return clip(v, 0, 1); }, 0.5) == 1.0);
  CHECK(d([](const Array& v) { return clip(v, 0, 1); }, 2.0) == 0.0);
  CHECK(d([](const Array& v) { return floor_divide(v, 2); }, 3.0) == 0.0);
  CHECK(d([](const Array& v) { return copysign(v, array({-1.0})); }, 3.0) == -1.0);
  // Batched: vmap of a composition equals it on the whole array.
  const Array a = array({{0.3f, 0.6f}, {-0.2f, 0.9f}});
  CHECK(vmap([](const Array& r) { return arctanh(r) + hypot(r, 1) + floor_divide(r, 0.25f); })(a).to_vector<float>() ==
        (arctanh(a) + hypot(a, 1) + floor_divide(a, 0.25f)).to_vector<float>());
}
