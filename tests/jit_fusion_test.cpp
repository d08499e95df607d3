// jit's elementwise fusion, checked on the programs it prints (compiled_text) and on values
// against eager evaluation: chains, scalar and row broadcasts, bools and selects, several
// outputs, sums taken by the kernel (rows, columns, everything), groups kept apart by a
// reduction, shapes it must not fuse, gradients of fused calls.
// Arithmetic matches eager bit for bit; exp, sin... use glibc's vector math in the fused kernel
// (within 4 ulp) and tanh a rational function (within 3 eps), so those chains are compared to 8
// ulp. Random streams fuse as sources.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/kernels/cpu.hpp>
#include <canopy/kernels/cpu_fused.hpp>
#include <canopy/random.hpp>

#include "helpers/text_count.hpp"

namespace {
using namespace canopy;

Array ramp(std::int64_t n, float lo, float hi) { return linspace(lo, hi, n).astype(DType::f32); }

void check_same(const Array& got, const Array& want, float ulp_tolerance = 0) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  if (got.dtype() == DType::bool_) {
    CHECK(got.to_vector<int>() == want.to_vector<int>());
    return;
  }
  std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  int bad = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    bool same = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] ||
                std::abs(g[i] - w[i]) <= ulp_tolerance * std::numeric_limits<float>::epsilon() * std::abs(w[i]);
    bad += !same;
  }
  CHECK(bad == 0);
}
}  // namespace

TEST_CASE("fusion: an elementwise chain becomes one kernel with the eager values") {
  auto f = [](const Array& x) { return tanh(x * 1.5f - 0.25f) * 0.75f; };
  auto jf = jit(f);
  Array x = ramp(1000, -3, 3);
  std::string text = jf.lower(x).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "fused_elementwise[ops=mul,sub,tanh,mul]") == 1);
  CHECK(count(text, " = ") == 1);  // nothing else runs
  check_same(jf(x), f(x), 8);  // the fused tanh is a rational function (within 3 eps of tanh)
  // Large enough for several tiles and both threads; eager f32 tanh then runs the fused kernels' form.
  Array big = ramp(1 << 18, -3, 3);
  check_same(jf(big), f(big), 8);
}

TEST_CASE("fusion: the inverse trigonometric and hyperbolic functions and cbrt fuse, within 4 ulp of eager") {
  using Fn = Array (*)(const Array&);
  const std::pair<const char*, Fn> ops[] = {{"asin", asin},   {"acos", acos},   {"atan", atan},
                                            {"asinh", asinh}, {"acosh", acosh}, {"atanh", atanh},
                                            {"sinh", sinh},   {"cosh", cosh},   {"cbrt", cbrt}};
  const Array x = ramp(3001, -3, 3);
  for (const auto& [name, op] : ops) {
    const std::string op_name = name;
    CAPTURE(op_name);
    // x * 0.3 + 1.9 spans (1, 2.8): inside every domain but asin's, acos's and atanh's, which then
    // give NaN in both forms.
    for (float shift : {0.0f, 1.9f}) {
      auto f = [op = op, shift](const Array& v) { return op(v * 0.3f + shift); };
      auto jf = jit(f);
      const std::string text = jf.lower(x).compiled_text();
      CAPTURE(text);
      CHECK(count(text, "fused_elementwise[ops=mul,add," + op_name + "]") == 1);
      check_same(jf(x), f(x), 4);  // libmvec's vector forms against libm's scalar ones
    }
  }
}

TEST_CASE("fusion: the fused tanh is within 3 eps of double-precision tanh, odd, +-1 far out, NaN through") {
  std::vector<float> v;
  for (int i = -120000; i <= 120000; ++i) v.push_back(static_cast<float>(i) * 1e-4f);  // [-12, 12]
  for (float e = 1e-30f; e < 1.0f; e *= 1.37f) {
    v.push_back(e);
    v.push_back(-e);
  }
  for (float s : {0.0f, -0.0f, INFINITY, -INFINITY, 9.0f, -9.0f, 1e30f}) v.push_back(s);
  const Array x = array(v, {static_cast<std::int64_t>(v.size())});
  auto f = jit([](const Array& a) { return tanh(a) * 1.0f; });  // a chain of two, so it fuses
  CHECK(count(f.lower(x).compiled_text(), "fused_elementwise[ops=tanh,mul]") == 1);
  const std::vector<float> y = f(x).to_vector<float>(), y_neg = f(-x).to_vector<float>();
  double worst = 0;
  int not_odd = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double want = std::tanh(static_cast<double>(v[i]));
    worst = std::max(worst, std::abs(y[i] - want) / std::max(std::abs(want), 1e-38));
    not_odd += y[i] != -y_neg[i];
  }
  CHECK(not_odd == 0);
  MESSAGE("fused tanh: worst relative error " << worst / std::numeric_limits<float>::epsilon() << " eps");
  CHECK(worst <= 3 * std::numeric_limits<float>::epsilon());
  const std::vector<float> ends = f(array({0.0f, -0.0f, 20.0f, -20.0f, INFINITY})).to_vector<float>();
  CHECK(ends == std::vector<float>{0.0f, 0.0f, 1.0f, -1.0f, 1.0f});
  CHECK(std::signbit(ends[1]));
  CHECK(std::isnan(f(array({NAN})).item<float>()));
}

TEST_CASE("fusion: scalars and trailing-dimension rows are read in place; bools and selects fuse") {
  Array x = reshape(ramp(128 * 40, -2, 2), {128, 40}), w = reshape(ramp(40 * 24, -1, 1), {40, 24});
  Array b = ramp(24, -0.5f, 0.5f);
  auto layer = [](const Array& x, const Array& w, const Array& b) { return nn::relu(matmul(x, w) + b); };
  auto jl = jit(layer);
  std::string text = jl.lower(x, w, b).compiled_text();
  CAPTURE(text);
  // The bias row runs as the matmul's epilogue (jit_epilogue_test.cpp), relu after it.
  CHECK(count(text, "dot_general_epilogue[ops=dot_general,add(row)]") == 1);
  CHECK(count(text, "max") == 1);
  check_same(jl(x, w, b), layer(x, w, b));

  auto leaky = [](const Array& v) { return std::pair{where(v > 0.0f, v, 0.1f * v), v > 0.0f}; };
  auto jleaky = jit(leaky);
  Array v = ramp(3001, -1, 1);
  text = jleaky.lower(v).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "fused_elementwise") == 1);
  auto [y, mask] = jleaky(v);
  auto [ye, me] = leaky(v);
  check_same(y, ye);
  check_same(mask, me);  // a bool result written from the fused kernel
}

TEST_CASE("fusion: an Adam-like update writes its three results from one kernel") {
  auto update = [](const Array& g, const Array& mu, const Array& nu, const Array& p, const Array& bc) {
    Array m = 0.1f * g + 0.9f * mu;
    Array v = 0.001f * (g * g) + 0.999f * nu;
    Array step = (m / bc) / (sqrt(v / bc) + 1e-8f);
    return std::tuple{m, v, p - 0.001f * step};
  };
  auto ju = jit(update);
  Array g = reshape(ramp(784 * 51, -1, 1), {784, 51}), mu = g * 0.5f, nu = g * g, p = g * 2.0f;
  Array bc = scalar(0.19f);
  std::string text = ju.lower(g, mu, nu, p, bc).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "fused_elementwise") == 1);
  auto [m1, v1, p1] = ju(g, mu, nu, p, bc);
  auto [m2, v2, p2] = update(g, mu, nu, p, bc);
  check_same(m1, m2);
  check_same(v1, v2);
  check_same(p1, p2);
}

TEST_CASE("fusion: a reduction between two elementwise steps keeps them apart") {
  auto f = [](const Array& x) {
    Array y = exp(x);
    return y * sum(y);  // the product reads y's sum, computed after y: one kernel cannot hold both
  };
  auto jf = jit(f);
  Array x = ramp(500, -1, 1);
  std::string text = jf.lower(x).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "fused_elementwise[ops=exp,reduce_sum]") == 1);  // the sum is taken as y is made
  CHECK(count(text, "= mul") == 1);
  check_same(jf(x), f(x), 8);

  // Two chains that only share an input stay two kernels (no sibling fusion yet), each fused.
  auto g = [](const Array& v) { return std::pair{exp(v) + 1.0f, sin(v) * 2.0f}; };
  auto jg = jit(g);
  text = jg.lower(x).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "fused_elementwise[ops=exp,add]") == 1);
  CHECK(count(text, "fused_elementwise[ops=sin,mul]") == 1);
  auto [a, c] = jg(x);
  auto [ae, ce] = g(x);
  check_same(a, ae, 8);
  check_same(c, ce, 8);
}

TEST_CASE("fusion: column broadcasts, integers and other shapes stay unfused and correct") {
  Array m = reshape(ramp(12, 0, 1), {4, 3}), col = reshape(ramp(4, 1, 2), {4, 1});
  auto f = [](const Array& m, const Array& col) { return exp(m * col) + 1.0f; };
  auto jf = jit(f);
  std::string text = jf.lower(m, col).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "fused_elementwise[ops=exp,add]") == 1);  // mul by a column is its own kernel
  check_same(jf(m, col), f(m, col), 8);

  auto ints = jit([](const Array& i) { return (i * 3 + 1) % 7; });
  text = ints.lower(arange(10)).compiled_text();
  CAPTURE(text);
  // Integer arithmetic keeps its kernels; only the bool logic of jnp's remainder fuses.
  CHECK(count(text, "= mul a 3:i32[]") == 1);
  CHECK(count(text, "fused_elementwise[ops=ne,and]") == 1);
  CHECK(ints(arange(10)).to_vector<int>() == ((arange(10) * 3 + 1) % 7).to_vector<int>());
}

TEST_CASE("fusion: NaN and infinities pass through max, min, comparisons and selects as eagerly") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Array x = array({nan, inf, -inf, 0.0f, -0.0f, 1.0f, -2.0f, nan});
  Array y = array({1.0f, nan, 2.0f, -0.0f, 0.0f, inf, -inf, nan});
  auto f = [](const Array& a, const Array& b) {
    return std::tuple{maximum(a, b) + minimum(a, b) * 0.5f, where(a < b, a, b) - 1.0f, (a == b) || (a != a)};
  };
  auto [p, q, r] = jit(f)(x, y);
  auto [pe, qe, re] = f(x, y);
  check_same(p, pe);
  check_same(q, qe);
  check_same(r, re);
}

TEST_CASE("fusion: gradients of a fused jit call and the switch that turns fusion off") {
  auto f = [](const Array& x) { return sum(tanh(x * 2.0f) * x); };
  Array x = ramp(300, -1, 1);
  Array g = grad(jit(f))(x), ge = grad(f)(x);
  check_same(g, ge, 4);
  auto jg = jit(grad(f));
  CHECK(count(jg.lower(x).compiled_text(), "fused_elementwise") >= 1);
  check_same(jg(x), ge, 4);

  set_elementwise_fusion(false);
  auto plain = jit([](const Array& v) { return exp(v) * 2.0f; });
  CHECK(count(plain.lower(x).compiled_text(), "fused_elementwise") == 0);
  set_elementwise_fusion(true);
  CHECK(elementwise_fusion());
}

TEST_CASE("fusion: normal's uniform -> erf_inv -> scale is one kernel equal to the unfused ops bit for bit") {
  namespace rnd = canopy::random;
  const Array key = rnd::key(7);
  // Sizes below a vector block, with a partial last block, and over several tiles on both threads.
  for (std::int64_t n : {5LL, 1000LL, (1LL << 16) + 3}) {
    CAPTURE(n);
    auto jn = jit([n](const Array& k) { return rnd::normal(k, {n}) * 0.5f + 1.0f; });
    const std::string text = jn.lower(key).compiled_text();
    CAPTURE(text);
    CHECK(count(text, "fused_elementwise[ops=random_uniform01,") == 1);
    CHECK(count(text, " = ") == 1);  // the uniforms are never stored
    Array fused = jn(key), unfused;
    {
      DisableJit eager;  // every op on its own kernel: the uniforms are materialised
      unfused = rnd::normal(key, {n}) * 0.5f + 1.0f;
    }
    check_same(fused, unfused);
  }
  // The eager sampler runs compiled too (as jax.random's samplers are jitted), with the same values.
  Array eager = rnd::normal(key, {1000}), plain;
  {
    DisableJit off;
    plain = rnd::normal(key, {1000});
  }
  check_same(eager, plain);
  // The legacy layout pairs element i with i + n/2, so its stream keeps its own kernel.
  rnd::LayoutScope legacy(rnd::Layout::legacy);
  auto jl = jit([](const Array& k) { return rnd::normal(k, {64}); });
  CHECK(count(jl.lower(key).compiled_text(), "random_uniform01[") == 1);
}

TEST_CASE("fusion: erf_inv's value does not depend on the element's position or its neighbours") {
  // Vector lanes and a scalar remainder loop would round differently (libmvec against libm).
  std::vector<float> v(37, 0.3f);
  v[3] = v[16] = v[36] = 0.9999f;  // the tail polynomial, next to central lanes
  const std::vector<float> y = erf_inv(array(v, Shape{37})).to_vector<float>();
  const float central = erf_inv(scalar(0.3f)).item<float>(), tail = erf_inv(scalar(0.9999f)).item<float>();
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(y[i] == (v[i] == 0.3f ? central : tail));
  auto jf = jit([](const Array& x) { return erf_inv(x * 1.0f); });
  CHECK(jf(array(v, Shape{37})).to_vector<float>() == y);
}

TEST_CASE("fusion: sums of a fused value over trailing dims, leading dims or everything are taken by its kernel") {
  // Sums are added in a different order than the eager reduction: compared to a relative 1e-5.
  auto close = [](const Array& got, const Array& want) {
    REQUIRE(got.shape() == want.shape());
    std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
    int bad = 0;
    for (std::size_t i = 0; i < g.size(); ++i) bad += !(std::abs(g[i] - w[i]) <= 1e-5f * std::max(1.0f, std::abs(w[i])));
    CHECK(bad == 0);
  };
  struct Case {
    Shape shape;
    std::vector<int> axes;
  };
  // Rows shorter and longer than a tile, columns that wrap inside a tile, a sum of everything big
  // enough for both threads, a single row, negative axes.
  const std::vector<Case> cases = {{{128, 10}, {1}},         {{3, 5000}, {-1}},       {{4, 7, 3}, {1, 2}},
                                   {{128, 512}, {0}},        {{1000, 3}, {0}},        {{6, 4, 5}, {0, 1}},
                                   {{1 << 18}, {0}},         {{64, 4096}, {0, 1}},    {{1, 3000}, {1}},
                                   {{300, 70}, {0}}};
  for (const Case& c : cases) {
    CAPTURE(to_string(c.shape));
    const Array x = reshape(ramp(shape_size(c.shape), -2, 2), c.shape);
    auto f = [&](const Array& x) { return reduce_sum(tanh(x) * 3.0f + 1.0f, c.axes); };
    auto jf = jit(f);
    const std::string text = jf.lower(x).compiled_text();
    CAPTURE(text);
    CHECK(count(text, "fused_elementwise[ops=tanh,mul,add,reduce_sum]") == 1);
    CHECK(count(text, " = ") == 1);  // the elementwise values are never written
    close(jf(x), f(x));
  }
  // A value both returned and summed (rows and columns of it at once), and a scalar register
  // (a broadcast constant) summed.
  const Array m = reshape(ramp(60 * 33, -1, 1), {60, 33});
  auto both = [](const Array& m) {
    Array y = exp(m) + 1.0f;
    return std::tuple{y, reduce_sum(y, {1}), reduce_sum(y, {0})};
  };
  auto jb = jit(both);
  std::string text = jb.lower(m).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "fused_elementwise[ops=exp,add,reduce_sum,reduce_sum]") == 1);
  auto [y1, r1, c1] = jb(m);
  auto [y2, r2, c2] = both(m);
  check_same(y1, y2, 8);
  close(r1, r2);
  close(c1, c2);
  auto constant = [](const Array& m) { return reduce_sum(broadcast_to(scalar(0.5f), m.shape()) + m * 0.0f, {0}); };
  close(jit(constant)(m), constant(m));
}

TEST_CASE("fusion: sums it does not take: middle axes, integers, a group closed by an earlier reader") {
  const Array x = reshape(ramp(4 * 5 * 6, -1, 1), {4, 5, 6});
  auto middle = [](const Array& x) { return reduce_sum(exp(x) * 2.0f, {1}); };
  std::string text = jit(middle).lower(x).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "reduce_sum") == 1);
  CHECK(count(text, "ops=exp,mul]") == 1);
  CHECK(count(text, "fused_elementwise[ops=exp,mul,reduce_sum]") == 0);
  auto ints = [](const Array& i) { return sum(i * 2); };
  CHECK(count(jit(ints).lower(arange(10)).compiled_text(), "fused_elementwise") == 0);
  // Two sums of rows of different lengths: only one joins the kernel.
  auto two = [](const Array& x) {
    Array y = exp(x) * 2.0f;
    return std::pair{reduce_sum(y, {2}), reduce_sum(y, {1, 2})};
  };
  text = jit(two).lower(x).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "fused_elementwise[ops=exp,mul,reduce_sum]") == 1);
  auto [a1, b1] = jit(two)(x);
  auto [a2, b2] = two(x);
  check_same(a1, a2, 8);
  check_same(b1, b2, 8);
  // A sum of a sum (a mean cross-entropy): the first joins the kernel, the second reads its result.
  auto nested = [](const Array& x) { return reduce_sum(reduce_sum(exp(x) * 2.0f, {2}), {0, 1}); };
  text = jit(nested).lower(x).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "fused_elementwise[ops=exp,mul,reduce_sum]") == 1);
  CHECK(jit(nested)(x).item<float>() == doctest::Approx(nested(x).item<float>()).epsilon(1e-6));
  // grad of a loss whose sum the kernel takes.
  auto loss = [](const Array& w) { return sum(tanh(w) * w); };
  const Array w = ramp(3000, -2, 2);
  check_same(jit(grad(loss))(w), grad(loss)(w), 8);
  CHECK(jit(loss)(w).item<float>() == doctest::Approx(loss(w).item<float>()).epsilon(1e-5));
}

TEST_CASE("fusion: log_softmax along the last axis runs on whole rows in the kernel; a cross-entropy is one kernel") {
  for (const Shape& shape : {Shape{128, 10}, Shape{7, 3000}, Shape{5, 6, 37}, Shape{1, 1024}}) {
    CAPTURE(to_string(shape));
    const std::int64_t classes = shape.back(), rows = shape_size(shape) / classes;
    const Array z = reshape(ramp(shape_size(shape), -6, 6), shape);
    const Array onehot = reshape(astype(arange(shape_size(shape)) % classes == 3, DType::f32), shape);
    auto ce = [](const Array& z, const Array& y) {
      Array lp = nn::log_softmax(z * 2.0f, -1);
      return std::pair{lp, -reduce_sum(lp * y, {static_cast<int>(z.ndim()) - 1})};
    };
    auto jce = jit(ce);
    const std::string text = jce.lower(z, onehot).compiled_text();
    CAPTURE(text);
    CHECK(count(text, "fused_elementwise[ops=mul,log_softmax,mul,neg,reduce_sum]") + count(text, "fused_elementwise[ops=mul,log_softmax,mul,reduce_sum") == 1);
    auto [lp1, l1] = jce(z, onehot);
    auto [lp2, l2] = ce(z, onehot);
    check_same(lp1, lp2);  // the eager kernel's routine, row by row: the same values
    check_same(l1, l2, 4);
    CHECK(l1.size() == rows);
  }
  // Not the last axis, or rows longer than kMaxFusedRow: log_softmax keeps its own kernel.
  const Array m = reshape(ramp(6 * 5, -1, 1), {6, 5});
  auto cols = [](const Array& m) { return nn::log_softmax(m * 2.0f, 0) + 1.0f; };
  CHECK(count(jit(cols).lower(m).compiled_text(), "ops=mul,log_softmax") == 0);
  check_same(jit(cols)(m), cols(m));
  const Array wide = reshape(ramp(2 * 20000, -1, 1), {2, 20000});
  CHECK(count(jit(cols).lower(wide).compiled_text(), "ops=mul,log_softmax") == 0);
  auto rows_of_wide = [](const Array& m) { return nn::log_softmax(m * 2.0f, 1); };
  CHECK(count(jit(rows_of_wide).lower(wide).compiled_text(), "log_softmax") == 1);
  CHECK(count(jit(rows_of_wide).lower(wide).compiled_text(), "fused_elementwise") == 0);
  // The gradient of a mean cross-entropy through jit, against eager.
  const Array z = reshape(ramp(64 * 10, -3, 3), {64, 10});
  const Array y = reshape(astype(arange(640) % 10 == 7, DType::f32), {64, 10});
  auto loss = [&](const Array& z) { return -mean(sum(nn::log_softmax(z, -1) * y, -1)); };
  check_same(jit(grad(loss))(z), grad(loss)(z), 8);
}

TEST_CASE("fusion: the kernel's registers share scratch tiles by liveness, with the values of one tile each") {
  using kernels::BinaryOp;
  using kernels::FusedInput;
  using kernels::FusedProgram;
  using kernels::FusedStep;
  using kernels::UnaryOp;
  using K = FusedStep::Kind;
  const auto op = [](auto o) { return static_cast<std::uint8_t>(o); };
  FusedProgram p;
  p.inputs = {{FusedInput::Mode::full, DType::f32, 0}, {FusedInput::Mode::scalar, DType::f32, 1}};
  p.steps = {{K::load, 0, 0},                        // r0 x
             {K::load, 0, 1},                        // r1 c
             {K::binary, op(BinaryOp::mul), 0, 1},   // r2 = x * c
             {K::binary, op(BinaryOp::add), 2, 0},   // r3 = r2 + x
             {K::unary, op(UnaryOp::tanh), 3},       // r4 = tanh(r3)   (an output)
             {K::binary, op(BinaryOp::mul), 4, 4},   // r5 = r4 * r4
             {K::unary, op(UnaryOp::erf_inv), 5},    // r6 = erf_inv(r5) (reads its input after writing)
             {K::binary, op(BinaryOp::sub), 6, 2},   // r7 = r6 - r2
             {K::unary, op(UnaryOp::exp), 7}};       // r8 = exp(r7)     (an output)
  p.outputs = {{4, DType::f32}, {8, DType::f32}, {2, DType::bool_}};
  kernels::cpu::plan_fused_program(p);
  REQUIRE(p.scratch_tile.size() == p.steps.size());
  CHECK(p.scratch_tiles < static_cast<int>(p.steps.size()));
  // Registers live at once never share a tile: the outputs (r2, r4, r8) live to the tile's end,
  // the others until their last reader (the next step, r5 and r7 alike).
  auto live = [&](int r, int k) { return r <= k && (r == 2 || r == 4 || r == 8 || k <= r + 1); };
  for (int a = 2; a < 9; ++a)
    for (int b = a + 1; b < 9; ++b)
      if (live(a, b)) CHECK_MESSAGE(p.scratch_tile[static_cast<std::size_t>(a)] != p.scratch_tile[static_cast<std::size_t>(b)], a, " ", b);
  // The same values as with one tile per register, over several tiles on both threads.
  const std::int64_t n = 70001;
  p.elements = n;
  p.inputs[0].size = n;
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = std::sin(0.001f * static_cast<float>(i));
  const float c = 0.5f;
  auto run = [&](const FusedProgram& q) {
    std::vector<float> y4(x.size()), y8(x.size());
    std::vector<std::uint8_t> b2(x.size());
    std::vector<const void*> in = {x.data(), &c};
    std::vector<void*> out = {y4.data(), y8.data(), b2.data()};
    kernels::cpu::fused_elementwise(q, in, out, n);
    return std::tuple{y4, y8, b2};
  };
  FusedProgram unplanned = p;
  unplanned.scratch_tile.clear();
  CHECK(run(p) == run(unplanned));
}
