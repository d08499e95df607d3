// Elementwise unary and binary ops against an independent f64 plain-loop reference, on random
// shapes including size-0 and size-1 dims and numpy broadcasting corner cases.
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

using namespace canopy;

namespace {

Array random_array(const Shape& s, DType d, double lo, double hi, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(shape_size(s)));
  for (auto& x : v) x = is_floating(d) ? u(g) : std::floor(u(g));
  return array(v, s).astype(d);
}

double tol_for(DType d) { return d == DType::f64 ? 1e-12 : 2e-6; }

bool close(double got, double want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol * (1 + std::fabs(want));
}

const std::vector<Shape> kShapes = {Shape{}, Shape{0}, Shape{1}, Shape{1, 1}, Shape{7}, Shape{3, 5},
                                    Shape{2, 1, 4}, Shape{0, 3}, Shape{100003}};

void check_unary(const char* label, Array (*op)(const Array&), double (*ref)(double), DType d, double lo, double hi,
                 double tol_scale = 1) {
  unsigned seed = 1;
  for (const Shape& s : kShapes) {
    std::string where = std::string(label) + " " + to_string(s);
    CAPTURE(where);
    Array x = random_array(s, d, lo, hi, seed++);
    Array y = op(x);
    REQUIRE(y.shape() == s);
    auto in = x.to_vector<double>();
    auto out = y.to_vector<double>();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < in.size(); ++i)
      if (!close(out[i], ref(in[i]), tol_for(d) * tol_scale)) ++bad;
    CHECK(bad == 0);
  }
}

double ref_sign(double x) { return x > 0 ? 1 : (x < 0 ? -1 : x); }
double ref_logistic(double x) { return 1 / (1 + std::exp(-x)); }
double ref_rsqrt(double x) { return 1 / std::sqrt(x); }
double ref_neg(double x) { return -x; }
double ref_round_away(double x) { return std::round(x); }
Array round_away(const Array& x) { return round(x, RoundingMethod::away_from_zero); }
Array round_even(const Array& x) { return round(x, RoundingMethod::to_nearest_even); }
double ref_round_even(double x) { return std::nearbyint(x); }

}  // namespace

TEST_CASE("unary ops: float functions match the f64 reference") {
  for (DType d : {DType::f32, DType::f64}) {
    SUBCASE(std::string(name(d)).c_str()) {
      check_unary("neg", neg, ref_neg, d, -3, 3);
      check_unary("abs", abs, [](double x) { return std::fabs(x); }, d, -3, 3);
      check_unary("sign", sign, ref_sign, d, -3, 3);
      check_unary("exp", exp, [](double x) { return std::exp(x); }, d, -5, 5);
      check_unary("log", log, [](double x) { return std::log(x); }, d, 0.01, 10);
      check_unary("log1p", log1p, [](double x) { return std::log1p(x); }, d, -0.9, 3);
      check_unary("expm1", expm1, [](double x) { return std::expm1(x); }, d, -3, 3);
      check_unary("sqrt", sqrt, [](double x) { return std::sqrt(x); }, d, 0, 10);
      check_unary("rsqrt", rsqrt, ref_rsqrt, d, 0.01, 10);
      check_unary("tanh", tanh, [](double x) { return std::tanh(x); }, d, -4, 4);
      check_unary("logistic", logistic, ref_logistic, d, -8, 8);
      check_unary("sin", sin, [](double x) { return std::sin(x); }, d, -6, 6);
      check_unary("cos", cos, [](double x) { return std::cos(x); }, d, -6, 6);
      check_unary("tan", tan, [](double x) { return std::tan(x); }, d, -1.4, 1.4, 4);
      check_unary("exp2", exp2, [](double x) { return std::exp2(x); }, d, -10, 10);
      check_unary("floor", floor, [](double x) { return std::floor(x); }, d, -3, 3);
      check_unary("ceil", ceil, [](double x) { return std::ceil(x); }, d, -3, 3);
      check_unary("round", round_away, ref_round_away, d, -3, 3);
      check_unary("round even", round_even, ref_round_even, d, -3, 3);
      check_unary("erf", erf, [](double x) { return std::erf(x); }, d, -3, 3);
    }
  }
}

TEST_CASE("unary ops: integer inputs") {
  SUBCASE("i32") {
    check_unary("neg", neg, ref_neg, DType::i32, -100, 100);
    check_unary("abs", abs, [](double x) { return std::fabs(x); }, DType::i32, -100, 100);
    check_unary("sign", sign, ref_sign, DType::i32, -3, 3);
    check_unary("floor is identity", floor, [](double x) { return x; }, DType::i32, -9, 9);
    CHECK(exp(array({0, 1})).dtype() == DType::f32);  // float-only ops promote, as jnp does
  }
}

TEST_CASE("round: lax's rounding methods, away from zero or to even") {
  Array x = array({0.5f, 1.5f, 2.5f, -0.5f, -2.5f});
  CHECK(round(x, RoundingMethod::away_from_zero).to_vector<float>() == std::vector<float>{1, 2, 3, -1, -3});
  CHECK(round(x, RoundingMethod::to_nearest_even).to_vector<float>() == std::vector<float>{0, 2, 2, -0, -2});
}

TEST_CASE("is_finite: inf and NaN are not finite; integers always are") {
  Array x = array({1.f, INFINITY, -INFINITY, NAN});
  CHECK(is_finite(x).to_vector<bool>() == std::vector<bool>{true, false, false, false});
  CHECK(is_finite(array({1, 2})).to_vector<bool>() == std::vector<bool>{true, true});
}

namespace {

using BinOp = Array (*)(const Array&, const Array&);

// Plain numpy-broadcast reference: map each output index to both operands.
void check_binary(const char* label, BinOp op, double (*ref)(double, double), DType d, double lo, double hi,
                  bool bool_out = false) {
  const std::pair<Shape, Shape> pairs[] = {
      {{3, 4}, {3, 4}}, {{3, 4}, {4}},     {{3, 1}, {1, 4}},      {{2, 1, 3}, {4, 1}}, {{0, 3}, {3}},
      {{1}, {5}},       {{}, {2, 3}},      {{5, 1, 1}, {1, 1, 1}}, {{}, {}},            {{2, 0}, {1, 1}},
      {{256, 512}, {512}}, {{512}, {256, 512}}, {{300, 200}, {300, 200}}, {{40000}, {}}};
  unsigned seed = 11;
  for (auto& [sa, sb] : pairs) {
    std::string where = std::string(label) + " " + to_string(sa) + " " + to_string(sb);
    CAPTURE(where);
    Array a = random_array(sa, d, lo, hi, seed++), b = random_array(sb, d, lo, hi, seed++);
    Array y = op(a, b);
    Shape so = broadcast_shapes(sa, sb);
    REQUIRE(y.shape() == so);
    CHECK(y.dtype() == (bool_out ? DType::bool_ : d));
    auto av = a.to_vector<double>(), bv = b.to_vector<double>(), yv = y.to_vector<double>();
    std::size_t r = so.size(), bad = 0;
    for (std::int64_t i = 0; i < shape_size(so); ++i) {
      std::int64_t rem = i, ia = 0, ib = 0, stra = 1, strb = 1;
      for (std::size_t k = r; k-- > 0;) {
        std::int64_t idx = rem % so[k];
        rem /= so[k];
        std::size_t oa = r - sa.size(), ob = r - sb.size();
        if (k >= oa) { std::int64_t da = sa[k - oa]; ia += (da == 1 ? 0 : idx) * stra; stra *= da; }
        if (k >= ob) { std::int64_t db = sb[k - ob]; ib += (db == 1 ? 0 : idx) * strb; strb *= db; }
      }
      if (!close(yv[static_cast<std::size_t>(i)], ref(av[static_cast<std::size_t>(ia)], bv[static_cast<std::size_t>(ib)]),
                 tol_for(d)))
        ++bad;
    }
    CHECK(bad == 0);
  }
}

double r_add(double x, double y) { return x + y; }
double r_sub(double x, double y) { return x - y; }
double r_mul(double x, double y) { return x * y; }
double r_div(double x, double y) { return x / y; }
double r_idiv(double x, double y) { return y == 0 ? -1 : std::trunc(x / y); }  // XLA: x / 0 is -1
double r_pow(double x, double y) { return std::pow(x, y); }
double r_max(double x, double y) { return std::max(x, y); }
double r_min(double x, double y) { return std::min(x, y); }
double r_atan2(double x, double y) { return std::atan2(x, y); }
double r_rem(double x, double y) { return std::fmod(x, y); }
double r_eq(double x, double y) { return x == y; }
double r_lt(double x, double y) { return x < y; }
double r_ge(double x, double y) { return x >= y; }
double r_ne(double x, double y) { return x != y; }

}  // namespace

TEST_CASE("binary ops: broadcasting results match the f64 reference") {
  SUBCASE("f32") {
    check_binary("add", add, r_add, DType::f32, -3, 3);
    check_binary("sub", sub, r_sub, DType::f32, -3, 3);
    check_binary("mul", mul, r_mul, DType::f32, -3, 3);
    check_binary("div", div, r_div, DType::f32, 0.5, 3);
    check_binary("pow", pow, r_pow, DType::f32, 0.5, 2);
    check_binary("max", max, r_max, DType::f32, -3, 3);
    check_binary("min", min, r_min, DType::f32, -3, 3);
    check_binary("atan2", atan2, r_atan2, DType::f32, -3, 3);
    check_binary("rem", rem, r_rem, DType::f32, 0.5, 5);
    check_binary("eq", eq, r_eq, DType::f32, -2, 2, true);
    check_binary("lt", lt, r_lt, DType::f32, -2, 2, true);
    check_binary("ge", ge, r_ge, DType::f32, -2, 2, true);
  }
  SUBCASE("f64") {
    check_binary("add", add, r_add, DType::f64, -3, 3);
    check_binary("div", div, r_div, DType::f64, 0.5, 3);
    check_binary("pow", pow, r_pow, DType::f64, 0.5, 2);
    check_binary("ne", ne, r_ne, DType::f64, -2, 2, true);
  }
  SUBCASE("i32") {
    check_binary("add", add, r_add, DType::i32, -50, 50);
    check_binary("mul", mul, r_mul, DType::i32, -50, 50);
    check_binary("div", div, r_idiv, DType::i32, -50, 50);
    check_binary("rem", rem, r_rem, DType::i32, 1, 50);
    check_binary("max", max, r_max, DType::i32, -50, 50);
    check_binary("lt", lt, r_lt, DType::i32, -5, 5, true);
  }
}

TEST_CASE("max and min propagate NaN like lax") {
  Array a = array({NAN, 1.f}), b = array({0.f, NAN});
  auto m = max(a, b).to_vector<float>();
  CHECK(std::isnan(m[0]));
  CHECK(std::isnan(m[1]));
}

TEST_CASE("integer division truncates; jnp divide and % follow numpy") {
  Array a = array({7, -7, 7, -7}), b = array({2, 2, -2, -2});
  CHECK(div(a, b).to_vector<int>() == std::vector<int>{3, -3, -3, 3});
  CHECK(rem(a, b).to_vector<int>() == std::vector<int>{1, -1, 1, -1});
  CHECK((a % b).to_vector<int>() == std::vector<int>{1, 1, -1, -1});  // sign of the divisor
  CHECK((a / b).dtype() == DType::f32);                                  // true division
  CHECK((a / b).to_vector<float>() == std::vector<float>{3.5, -3.5, -3.5, 3.5});
  CHECK((array({-7.5f}) % 2).to_vector<float>() == std::vector<float>{0.5f});
}

TEST_CASE("bitwise ops are logical on bool, bitwise on integers and TypeErrors on floats") {
  Array t = array(std::vector<bool>{true, true, false, false}, {4});
  Array u = array(std::vector<bool>{true, false, true, false}, {4});
  CHECK(bitwise_and(t, u).to_vector<bool>() == std::vector<bool>{true, false, false, false});
  CHECK((t | u).to_vector<bool>() == std::vector<bool>{true, true, true, false});
  CHECK((t ^ u).to_vector<bool>() == std::vector<bool>{false, true, true, false});
  CHECK((~t).to_vector<bool>() == std::vector<bool>{false, false, true, true});
  CHECK(bitwise_and(array({6}), array({3})).item<int>() == 2);
  CHECK((array({6}) & 3).item<int>() == 2);
  CHECK((array({6u}) | 1).item<std::uint32_t>() == 7u);
  CHECK((array({6}) ^ array({3})).item<int>() == 5);
  CHECK(bitwise_not(array({0})).item<int>() == -1);
  CHECK(invert(array({5u})).item<std::uint32_t>() == 0xFFFFFFFAu);
  CHECK_THROWS_AS(bitwise_and(array({1.f}), array({1.f})), TypeError);
  CHECK_THROWS_AS(bitwise_not(array({1.f})), TypeError);
  try {
    bitwise_or(array({1.f}), array({1.f}));
  } catch (const TypeError& e) {
    CHECK(std::string(e.what()).find("or: operand") == 0);
  }
}

TEST_CASE("logical ops read any dtype as truth values and return bool, as jnp.logical_*") {
  Array t = array(std::vector<bool>{true, true, false, false}, {4});
  Array u = array(std::vector<bool>{true, false, true, false}, {4});
  CHECK(logical_and(t, u).to_vector<bool>() == std::vector<bool>{true, false, false, false});
  CHECK((t || u).to_vector<bool>() == std::vector<bool>{true, true, true, false});
  CHECK(logical_xor(t, u).to_vector<bool>() == std::vector<bool>{false, true, true, false});
  CHECK((!t).to_vector<bool>() == std::vector<bool>{false, false, true, true});
  // jnp.logical_and(6, 3) is True (bitwise 6 & 3 would be 2); floats count too.
  CHECK(logical_and(array({6}), array({3})).to_vector<bool>() == std::vector<bool>{true});
  CHECK(logical_and(array({6, 0}), array({1, 1})).dtype() == DType::bool_);
  CHECK(logical_not(array({0, 7})).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK(logical_or(array({0.f, 0.f}), array({-0.5f, 0.f})).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK(logical_xor(array({2.0}), array({1u})).to_vector<bool>() == std::vector<bool>{false});
}

TEST_CASE("operators: incompatible broadcast is a ShapeError naming the op and both shapes") {
  Array a = zeros({2, 3}), b = zeros({4});
  CHECK_THROWS_AS(a + b, ShapeError);
  try {
    (void)add(a, b);
    FAIL("no throw");
  } catch (const ShapeError& e) {
    std::string m = e.what();
    CHECK(m.find("add:") == 0);
    CHECK(m.find("[2,3]") != std::string::npos);
    CHECK(m.find("[4]") != std::string::npos);
  }
  CHECK_THROWS_AS(mul(zeros({3}), zeros({2})), ShapeError);
  CHECK_THROWS_AS(zeros({2, 3}) < zeros({3, 2}), ShapeError);
}

TEST_CASE("operators: chains of scalars and arrays") {
  Array x = array({-1.f, 0.f, 2.f});
  Array y = tanh(x * 1.5f - 0.25f) * 0.75f;
  auto v = y.to_vector<float>();
  for (std::size_t i = 0; i < 3; ++i) {
    double xi = x.to_vector<double>()[i];
    CHECK(v[i] == doctest::Approx(std::tanh(xi * 1.5 - 0.25) * 0.75).epsilon(1e-6));
  }
  CHECK((2 - x).to_vector<float>() == std::vector<float>{3, 2, 0});
  CHECK((-x).to_vector<float>() == std::vector<float>{1, -0.f, -2});
  CHECK((x == 0).to_vector<bool>() == std::vector<bool>{false, true, false});
  CHECK((1 < x).to_vector<bool>() == std::vector<bool>{false, false, true});
}

TEST_CASE("square and reciprocal: composites keep jnp dtypes") {
  CHECK(square(array({-3, 2})).to_vector<int>() == std::vector<int>{9, 4});
  CHECK(reciprocal(array({2.f, 4.f})).to_vector<float>() == std::vector<float>{0.5f, 0.25f});
  CHECK(reciprocal(array({2, 4})).dtype() == DType::f32);
  CHECK(reciprocal(array({2.0})).dtype() == DType::f64);
}

TEST_CASE("maximum with a C++ scalar is elementwise (ReLU), not a reduction") {
  Array x = array({-1.f, 2.f});
  CHECK(maximum(x, 0).to_vector<float>() == std::vector<float>{0, 2});
  CHECK(minimum(x, 0.5).to_vector<float>() == std::vector<float>{-1, 0.5f});
}
