// Edge values where jax.numpy and numpy part ways or XLA defines what C leaves undefined: denormal
// inputs under flushing, integer division by zero, rounding ties, out-of-order split points.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/kernels/cpu_runtime.hpp>

using namespace canopy;

namespace {

/// Bit-equal, or both NaN.
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

using Unary = Array (*)(const Array&);
struct NamedUnary {
  const char* name;
  Unary f;
};

// Every float unary function: with denormals flushed, a denormal operand must give what a zero of
// its sign gives, eagerly, jitted (the fused kernel), and on arrays long enough for the threaded and
// oneDNN paths.
const NamedUnary kUnary[] = {
    {"exp", exp},       {"log", log},         {"log1p", log1p},   {"expm1", expm1},   {"tanh", tanh},
    {"logistic", logistic}, {"sin", sin},     {"cos", cos},       {"tan", tan},       {"exp2", exp2},
    {"erf", erf},       {"erf_inv", erf_inv}, {"sqrt", sqrt},     {"rsqrt", rsqrt},   {"asin", asin},
    {"acos", acos},     {"atan", atan},       {"asinh", asinh},   {"acosh", acosh},   {"atanh", atanh},
    {"sinh", sinh},     {"cosh", cosh},       {"cbrt", cbrt},     {"log2", log2},     {"log10", log10},
    {"trunc", trunc},   {"floor", floor},     {"ceil", ceil},     {"signbit", [](const Array& x) { return signbit(x).astype(x.dtype()); }},
};

/// The elements as stored (a host read widens exactly; astype would be an op, and flush).
std::vector<double> values(const Array& a) { return a.to_vector<double>(); }

/// f of [+denormal, -denormal] against f of [+0, -0], element by element, in dtype d, for n copies.
void check_flushed(const NamedUnary& u, DType d, std::int64_t n, bool jitted) {
  const double tiny = d == DType::f32 ? 1e-40 : 5e-324;
  std::vector<double> den, zero;
  for (std::int64_t i = 0; i < n; ++i) {
    den.push_back(i % 2 ? -tiny : tiny);
    zero.push_back(i % 2 ? -0.0 : 0.0);
  }
  // Made from host vectors of the dtype itself (a conversion would be an op, and flush).
  auto make = [&](const std::vector<double>& v) {
    return d == DType::f64 ? array(v, {n}) : array(std::vector<float>(v.begin(), v.end()), {n});
  };
  const Array x = make(den), z = make(zero);
  REQUIRE(values(x)[0] == (d == DType::f32 ? static_cast<double>(static_cast<float>(tiny)) : tiny));
  auto f = [&](const Array& a) { return jitted ? jit(u.f)(a) : u.f(a); };
  const auto got = values(f(x)), want = values(f(z));
  for (std::int64_t i = 0; i < n; i += std::max<std::int64_t>(1, n / 4) | 1) {
    const double g = got[static_cast<std::size_t>(i)], w = want[static_cast<std::size_t>(i)];
    const std::string where = std::string(u.name) + " " + std::string(name(d)) + (jitted ? " jitted" : " eager") +
                              " n=" + std::to_string(n) + " element " + std::to_string(i);
    CAPTURE(where);
    CAPTURE(g);
    CAPTURE(w);
    CHECK(same(g, w));
  }
}

}  // namespace

TEST_CASE("denormals: every float function sees a flushed denormal as a zero of its sign") {
  REQUIRE(kernels::cpu::flush_denormals());
  for (const NamedUnary& u : kUnary)
    for (DType d : {DType::f32, DType::f64})
      for (std::int64_t n : {2, 1 << 16}) {
        check_flushed(u, d, n, false);
        if (n == 2 || d == DType::f32) check_flushed(u, d, n, true);
      }
}

TEST_CASE("denormals: log, power and arctan2 of a flushed denormal are those of zero, as XLA on CPU") {
  // numpy keeps the denormal (log(1e-40) = -92.1); XLA flushes it: log is -inf, not the -103.97 an
  // exponent read off the denormal's bits gives.
  CHECK(log(array({1e-40f})).item<float>() == -INFINITY);
  CHECK(log(array({5e-324})).item<double>() == -INFINITY);
  CHECK(log(full({1 << 16}, 1e-40, DType::f32)).to_vector<float>()[12345] == -INFINITY);
  CHECK(jit([](const Array& x) { return log(x * 1.0f); })(array({1e-40f})).item<float>() == -INFINITY);
  CHECK(power(array({5e-324}), array({0.5})).item<double>() == 0.0);
  CHECK(power(array({5e-324}), array({-0.5})).item<double>() == INFINITY);
  CHECK(power(array({1e-40f}), array({0.5f})).item<float>() == 0.0f);
  // atan2(+0, -1) is +pi: the flushed operand keeps its sign.
  CHECK(arctan2(array({5e-324}), array({-1.0})).item<double>() == M_PI);
  CHECK(arctan2(array({-5e-324}), array({-1.0})).item<double>() == -M_PI);
  CHECK(arctan2(array({1e-40f}), array({-1.f})).item<float>() == static_cast<float>(M_PI));
  CHECK(jit([](const Array& a, const Array& b) { return arctan2(a, b); })(array({1e-40f}), array({-1.f})).item<float>() ==
        static_cast<float>(M_PI));
  // fmod reads bits too: fmod(denormal, 1) is 0 and fmod(1, denormal) is fmod(1, 0), NaN.
  CHECK(fmod(array({1e-40f}), array({1.f})).item<float>() == 0.f);
  CHECK(std::isnan(fmod(array({1.0}), array({5e-324})).item<double>()));
}

TEST_CASE("denormals: with flushing off every function sees the denormal itself (numpy's values)") {
  kernels::cpu::set_flush_denormals(false);
  const float log_tiny = log(array({1e-40f})).item<float>();
  const double log_min = log(array({5e-324})).item<double>();
  const double sqrt_min = power(array({5e-324}), array({0.5})).item<double>();
  const double atan2_min = arctan2(array({5e-324}), array({-1.0})).item<double>();
  kernels::cpu::set_flush_denormals(true);
  CHECK(log_tiny == doctest::Approx(-92.10341).epsilon(1e-6));  // numpy: -92.10341
  CHECK(log_min == doctest::Approx(-744.4400719213812).epsilon(1e-14));
  CHECK(sqrt_min == doctest::Approx(2.2227587494850775e-162).epsilon(1e-14));
  CHECK(atan2_min == M_PI);
}

TEST_CASE("integer lax.div and lax.rem by zero and of the lowest value by -1, as XLA defines them") {
  const std::int32_t lo = std::numeric_limits<std::int32_t>::lowest();
  Array x = array({7, -7, 0, lo, lo, 7}), y = array({0, 0, 0, -1, 1, -1});
  // x / 0 is -1 (all bits set); lowest / -1 is lowest; x % 0 is x; lowest % -1 is 0.
  CHECK(div(x, y).to_vector<int>() == std::vector<int>{-1, -1, -1, lo, lo, -7});
  CHECK(rem(x, y).to_vector<int>() == std::vector<int>{7, -7, 0, 0, 0, 0});
  Array u = array({7u, 0u, 4000000000u}), v = array({0u, 0u, 3u});
  CHECK(div(u, v).to_vector<unsigned>() == std::vector<unsigned>{4294967295u, 4294967295u, 1333333333u});
  CHECK(rem(u, v).to_vector<unsigned>() == std::vector<unsigned>{7u, 0u, 1u});
  // The narrow and wide integers too.
  CHECK(div(array({5, -128}).astype(DType::i8), array({0, -1}).astype(DType::i8)).to_vector<int>() ==
        std::vector<int>{-1, -128});
  CHECK(div(array({5}).astype(DType::u8), array({0}).astype(DType::u8)).to_vector<int>() == std::vector<int>{255});
  CHECK(rem(array({5}).astype(DType::u8), array({0}).astype(DType::u8)).to_vector<int>() == std::vector<int>{5});
  CHECK(div(array({5}).astype(DType::i64), array({0}).astype(DType::i64)).to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{-1});
  // Jitted and batched alike.
  CHECK(jit([](const Array& a, const Array& b) { return div(a, b); })(x, y).to_vector<int>() ==
        std::vector<int>{-1, -1, -1, lo, lo, -7});
  CHECK(vmap([](const Array& a, const Array& b) { return rem(a, b); })(x, y).to_vector<int>() ==
        std::vector<int>{7, -7, 0, 0, 0, 0});
  // jnp's functions build on them: remainder and fmod by 0 are 0 (the divisor replaced by 1), and
  // floor_divide follows JAX's composition of lax.div and lax.rem (x // 0 is -2 for x != 0).
  CHECK(remainder(array({7, -7}), array({0, 0})).to_vector<int>() == std::vector<int>{0, 0});
  CHECK(fmod(array({7, -7}), array({0, 0})).to_vector<int>() == std::vector<int>{0, 0});
  CHECK(floor_divide(array({7, -7, 0}), array({0, 0, 0})).to_vector<int>() == std::vector<int>{-2, -2, -1});
}

TEST_CASE("round: jnp.round rounds half to even; lax's round keeps its rounding_method") {
  Array x = array({0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.7f});
  CHECK(round(x).to_vector<float>() == std::vector<float>{0, 2, 2, -0.f, -2, 4});
  CHECK(std::signbit(round(x).to_vector<float>()[3]));
  CHECK(round(x, RoundingMethod::away_from_zero).to_vector<float>() == std::vector<float>{1, 2, 3, -1, -3, 4});
  CHECK(round(x, RoundingMethod::to_nearest_even).to_vector<float>() == std::vector<float>{0, 2, 2, -0.f, -2, 4});
  CHECK(around(array({2.5})).item<double>() == 2.0);
  // decimals: x * 10^d rounded half to even, divided back (numpy's and jnp's method).
  CHECK(round(array({1.25, 1.35, -2.675, 1234.5}), 1).to_vector<double>() ==
        std::vector<double>{1.2, 1.4, -2.7, 1234.5});
  CHECK(round(array({1250.0, 1350.0, -1234.5}), -2).to_vector<double>() == std::vector<double>{1200.0, 1400.0, -1200.0});
  CHECK(round(array({7, -3})).to_vector<int>() == std::vector<int>{7, -3});  // integers: unchanged
  CHECK(round(array({7, -3})).dtype() == DType::i32);
  CHECK(rint(array({2.5f, 3.5f})).to_vector<float>() == std::vector<float>{2, 4});
  CHECK(rint(array({2, 3})).dtype() == DType::f32);  // rint makes integers float, as jnp.rint
}

TEST_CASE("split: points out of order slice as numpy does (each piece from the previous point)") {
  // np.split(np.arange(4), [3, 1, 10]) -> [0 1 2], [], [1 2 3], []
  auto p = split(arange(4), {3, 1, 10});
  REQUIRE(p.size() == 4);
  CHECK(p[0].to_vector<int>() == std::vector<int>{0, 1, 2});
  CHECK(p[1].size() == 0);
  CHECK(p[2].to_vector<int>() == std::vector<int>{1, 2, 3});
  CHECK(p[3].size() == 0);
  // np.split(np.arange(6), [-2, 2, 5, 4]) -> [0 1 2 3], [], [2 3 4], [], [4 5]
  auto q = split(arange(6), {-2, 2, 5, 4});
  REQUIRE(q.size() == 5);
  CHECK(q[0].to_vector<int>() == std::vector<int>{0, 1, 2, 3});
  CHECK(q[1].size() == 0);
  CHECK(q[2].to_vector<int>() == std::vector<int>{2, 3, 4});
  CHECK(q[3].size() == 0);
  CHECK(q[4].to_vector<int>() == std::vector<int>{4, 5});
}
