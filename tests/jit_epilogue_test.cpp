// jit's matmul epilogue fusion, checked on the programs it prints (compiled_text) and on values
// against eager evaluation: each step kind with scalar, row and full operands, transposed and
// batched matmuls, chains that must stop (a value read twice, a program output, two matmuls
// meeting, a column, other dtypes), NaN and infinities, gradients, and the same epilogues run as a
// pass each after a plain matmul (where oneDNN builds no post-ops).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/kernels/cpu.hpp>
#include <canopy/random.hpp>

#include "helpers/text_count.hpp"

namespace {
using namespace canopy;

Array uniform_array(std::uint32_t seed, const Shape& s) { return random::uniform(random::key(seed), s, DType::f32, -1, 1); }

/// Values equal within `rel` of the larger magnitude (0: bit for bit up to the sign of zero).
void check_close(const Array& got, const Array& want, float rel = 0) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  int bad = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const bool same = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] ||
                      std::abs(g[i] - w[i]) <= rel * std::max(std::abs(w[i]), 1e-3f);
    if (!same && bad++ < 3) MESSAGE("element ", i, ": ", g[i], " vs ", w[i]);
  }
  CHECK(bad == 0);
}

/// The epilogue runs as eager kernels after a plain matmul while alive (oneDNN post-ops otherwise).
struct EpilogueAsPasses {
  EpilogueAsPasses() { kernels::cpu::set_epilogue_post_ops(false); }
  ~EpilogueAsPasses() { kernels::cpu::set_epilogue_post_ops(true); }
};

}  // namespace

TEST_CASE("epilogue: each step kind fuses into the matmul with the eager values") {
  const Array x = uniform_array(1, {96, 40}), w = uniform_array(2, {40, 72});
  const Array row = uniform_array(3, {72}), full = uniform_array(4, {96, 72}), s = scalar(0.75f);
  const Array positive = uniform_array(5, {72}) + 2.f;
  struct Case {
    const char* printed;
    std::function<Array(const Array&, const Array&)> f;
    float rel;  // arithmetic is exact; tanh is oneDNN's (a few ulp)
  };
  const std::vector<Case> cases = {
      {"ops=dot_general,add(row)]", [&](auto& x, auto& w) { return matmul(x, w) + row; }, 0},
      {"ops=dot_general,add(row)]", [&](auto& x, auto& w) { return row + matmul(x, w); }, 0},
      {"ops=dot_general,add(full)]", [&](auto& x, auto& w) { return matmul(x, w) + full; }, 0},
      {"ops=dot_general,mul(scalar)]", [&](auto& x, auto& w) { return matmul(x, w) * s; }, 0},
      {"ops=dot_general,mul(scalar)]", [&](auto& x, auto& w) { return 0.5f * matmul(x, w); }, 0},
      {"ops=dot_general,sub(row)]", [&](auto& x, auto& w) { return matmul(x, w) - row; }, 0},
      {"ops=dot_general,sub(full)]", [&](auto& x, auto& w) { return full - matmul(x, w); }, 0},
      {"ops=dot_general,div(row)]", [&](auto& x, auto& w) { return matmul(x, w) / positive; }, 0},
      {"ops=dot_general,neg]", [&](auto& x, auto& w) { return -matmul(x, w); }, 0},
      {"ops=dot_general,mul(scalar),add(row),tanh]", [&](auto& x, auto& w) { return tanh(matmul(x, w) * 1.5f + row); }, 4e-6f},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    CAPTURE(i);
    auto jf = jit(c.f);
    const std::string text = jf.lower(x, w).compiled_text();
    CAPTURE(text);
    CHECK(count(text, std::string("dot_general_epilogue[") + c.printed) == 1);
    CHECK(count(text, " = ") == 1);  // nothing else runs
    check_close(jf(x, w), c.f(x, w), c.rel);
    EpilogueAsPasses passes;
    check_close(jit(c.f)(x, w), c.f(x, w), c.rel);
  }
}

TEST_CASE("epilogue: transposed and batched matmuls read in place keep their epilogue") {
  // An SGD update of a weight from its gradient, w - lr * (x^T g): x read transposed in place.
  const Array x = uniform_array(1, {64, 48}), g = uniform_array(2, {64, 32}), w = uniform_array(3, {48, 32});
  auto sgd = [](const Array& x, const Array& g, const Array& w) {
    return w - dot_general(x, g, {{0}, {0}, {}, {}}) * 0.01f;
  };
  auto js = jit(sgd);
  std::string text = js.lower(x, g, w).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "dot_general_epilogue[ops=dot_general,mul(scalar),sub(full)]") == 1);
  check_close(js(x, g, w), sgd(x, g, w));
  // g w^T + b: the rhs read transposed.
  const Array b = uniform_array(4, {48});
  auto back = [](const Array& g, const Array& w, const Array& b) { return dot_general(g, w, {{1}, {1}, {}, {}}) + b; };
  auto jb = jit(back);
  text = jb.lower(g, w, b).compiled_text();
  CHECK(count(text, "dot_general_epilogue[ops=dot_general,add(row)]") == 1);
  check_close(jb(g, w, b), back(g, w, b));
  // A batched matmul (a leading batch axis on both sides) with a row over its columns and a full addend.
  const Array xs = uniform_array(5, {3, 16, 24}), ws = uniform_array(6, {3, 24, 8}), r = uniform_array(7, {8});
  const Array f = uniform_array(8, {3, 16, 8});
  auto batched = [&](const Array& xs, const Array& ws) { return tanh(matmul(xs, ws) + r) - f; };
  auto jm = jit(batched);
  text = jm.lower(xs, ws).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "dot_general_epilogue[ops=dot_general,add(row),tanh,sub(full)]") == 1);
  check_close(jm(xs, ws), batched(xs, ws), 4e-6f);
  EpilogueAsPasses passes;
  check_close(jit(batched)(xs, ws), batched(xs, ws), 4e-6f);
  check_close(jit(sgd)(x, g, w), sgd(x, g, w));
}

TEST_CASE("epilogue: a chain stops where its value is read twice, returned, met by another matmul or not a row") {
  const Array x = uniform_array(1, {32, 16}), w = uniform_array(2, {16, 8}), row = uniform_array(3, {8});
  // The pre-activation is also returned: the bias fuses, the relu reads the returned value.
  auto both = [&](const Array& x, const Array& w) {
    Array pre = matmul(x, w) + row;
    return std::pair{pre, nn::relu(pre)};
  };
  std::string text = jit(both).lower(x, w).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "dot_general_epilogue[ops=dot_general,add(row)]") == 1);
  CHECK(count(text, "max") == 1);
  auto [p1, r1] = jit(both)(x, w);
  auto [p2, r2] = both(x, w);
  check_close(p1, p2);
  check_close(r1, r2);
  // The matmul's own result read twice: nothing fuses into it.
  auto twice = [](const Array& x, const Array& w) {
    Array y = matmul(x, w);
    return tanh(y) * y;
  };
  text = jit(twice).lower(x, w).compiled_text();
  CHECK(count(text, "dot_general_epilogue") == 0);
  check_close(jit(twice)(x, w), twice(x, w), 1e-5f);
  // Two matmuls added: the first takes the second's result as its full addend.
  const Array v = uniform_array(4, {32, 16});
  auto sum2 = [&](const Array& x, const Array& w) { return matmul(x, w) + matmul(v, w); };
  text = jit(sum2).lower(x, w).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "dot_general_epilogue[ops=dot_general,add(full)]") == 1);
  CHECK(count(text, "dot_general[") == 1);
  check_close(jit(sum2)(x, w), sum2(x, w));
  // A column ([32, 1]) is neither a row nor a scalar; x / y and max(y, 1) have no post-op.
  const Array col = uniform_array(5, {32, 1});
  auto column = [&](const Array& x, const Array& w) { return matmul(x, w) + col; };
  CHECK(count(jit(column).lower(x, w).compiled_text(), "dot_general_epilogue") == 0);
  check_close(jit(column)(x, w), column(x, w));
  auto divided = [&](const Array& x, const Array& w) { return row / matmul(x, w); };
  CHECK(count(jit(divided).lower(x, w).compiled_text(), "dot_general_epilogue") == 0);
  auto clipped = [&](const Array& x, const Array& w) { return maximum(matmul(x, w), 1.f); };
  CHECK(count(jit(clipped).lower(x, w).compiled_text(), "dot_general_epilogue") == 0);
  check_close(jit(clipped)(x, w), clipped(x, w));
  // Other dtypes keep their own kernels.
  auto bf = [](const Array& x, const Array& w) { return matmul(x, w) + 1.f; };
  const Array xb = x.astype(DType::bf16), wb = w.astype(DType::bf16);
  CHECK(count(jit(bf).lower(xb, wb).compiled_text(), "dot_general_epilogue") == 0);
  // With elementwise fusion or epilogue fusion off, no epilogue.
  auto biased = [&](const Array& x, const Array& w) { return matmul(x, w) + row; };
  REQUIRE(count(jit(biased).lower(x, w).compiled_text(), "dot_general_epilogue") == 1);
  set_elementwise_fusion(false);
  CHECK(count(jit(biased).lower(x, w).compiled_text(), "dot_general_epilogue") == 0);
  set_elementwise_fusion(true);
  set_epilogue_fusion(false);
  CHECK(!epilogue_fusion());
  CHECK(count(jit(biased).lower(x, w).compiled_text(), "dot_general_epilogue") == 0);
  set_epilogue_fusion(true);
}

TEST_CASE("epilogue: the program docs/reference/jit.md prints") {
  const Array x = uniform_array(1, {128, 256}), w = uniform_array(2, {256, 64}), b = uniform_array(3, {64});
  auto layer = jit([](const Array& x, const Array& w, const Array& b) { return tanh(matmul(x, w) + b); });
  CHECK(layer.lower(x, w, b).compiled_text() ==
        "{ lambda ; a:f32[128,256] b:f32[256,64] c:f32[64]. let\n"
        "    d:f32[128,64] = dot_general_epilogue[ops=dot_general,add(row),tanh] a b c\n"
        "  in (d,) }");
}

TEST_CASE("epilogue: NaN and infinities pass through as eagerly; relu keeps NaN, so it is not a post-op") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> xv(8 * 4, 0.5f);
  xv[0] = nan, xv[5] = inf, xv[10] = -inf;
  const Array x = array(xv, {8, 4}), w = uniform_array(2, {4, 6}), row = uniform_array(3, {6});
  auto f = [&](const Array& x, const Array& w) { return nn::relu(matmul(x, w) * 2.f + row); };
  // relu stays a max of its own: oneDNN's relu and binary max turn NaN into 0.
  const std::string text = jit(f).lower(x, w).compiled_text();
  CAPTURE(text);
  CHECK(count(text, "dot_general_epilogue[ops=dot_general,mul(scalar),add(row)]") == 1);
  CHECK(count(text, "max") == 1);
  check_close(jit(f)(x, w), f(x, w));
  auto g = [&](const Array& x, const Array& w) { return tanh(matmul(x, w)) - row; };
  check_close(jit(g)(x, w), g(x, w), 4e-6f);
  EpilogueAsPasses passes;
  check_close(jit(f)(x, w), f(x, w));
}

TEST_CASE("epilogue: exp and logistic stay elementwise kernels; negation keeps the sign of zero") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // oneDNN's exp and logistic post-ops turn NaN into inf and flush results below ~1.7e-38 to 0.
  const Array x = array(std::vector<float>{nan, 1.f, -86.7f, -87.f, -87.3f}, {5, 1}), w = ones({1, 3});
  auto e = [](const Array& x, const Array& w) { return exp(matmul(x, w)) * 2.f; };
  auto l = [](const Array& x, const Array& w) { return log(logistic(matmul(x, w))); };
  for (auto f : {std::function<Array(const Array&, const Array&)>(e), std::function<Array(const Array&, const Array&)>(l)}) {
    const std::string text = jit(f).lower(x, w).compiled_text();
    CAPTURE(text);
    CHECK(count(text, "dot_general_epilogue") == 0);
    check_close(jit(f)(x, w), f(x, w), 1e-5f);
  }
  CHECK(std::isnan(jit(e)(x, w).to_vector<float>()[0]));
  CHECK(jit(l)(x, w).to_vector<float>()[9] == doctest::Approx(-87.f).epsilon(1e-4));  // row 3: x = -87
  // -(x w) and -0 - (x w) where x w is +0: -0, so 1 / that is -inf, as eagerly.
  const Array zero_x = zeros({4, 2}), w2 = ones({2, 3}), mz = full({4, 3}, -0.f);
  auto neg = [](const Array& x, const Array& w) { return 1.f / -matmul(x, w); };
  auto rsub = [&](const Array& x, const Array& w) { return 1.f / (mz - matmul(x, w)); };
  for (auto f : {std::function<Array(const Array&, const Array&)>(neg), std::function<Array(const Array&, const Array&)>(rsub)}) {
    const std::string text = jit(f).lower(zero_x, w2).compiled_text();
    CAPTURE(text);
    CHECK(count(text, "dot_general_epilogue") == 1);
    const std::vector<float> got = jit(f)(zero_x, w2).to_vector<float>(), want = f(zero_x, w2).to_vector<float>();
    CHECK(want[0] == -std::numeric_limits<float>::infinity());
    CHECK(got == want);
    EpilogueAsPasses passes;
    CHECK(jit(f)(zero_x, w2).to_vector<float>() == want);
  }
}

TEST_CASE("epilogue: gradients of and through a jitted layer with an epilogue match eager ones") {
  const Array x = uniform_array(1, {32, 16}), w = uniform_array(2, {16, 8}), b = uniform_array(3, {8});
  auto loss = [&](const Array& w, const Array& b) { return sum(tanh(matmul(x, w) + b) * 0.5f); };
  auto [gw, gb] = jit(grad(loss, argnums<0, 1>))(w, b);
  auto [ew, eb] = grad(loss, argnums<0, 1>)(w, b);
  check_close(gw, ew, 1e-5f);
  check_close(gb, eb, 1e-5f);
  auto [hw, hb] = grad(jit(loss), argnums<0, 1>)(w, b);
  check_close(hw, ew, 1e-5f);
  check_close(hb, eb, 1e-5f);
}

TEST_CASE("epilogue: a donated weight is updated in place by the matmul that makes its step") {
  // w - lr * (x^T g) with w donated: the result takes w's buffer, and oneDNN's sum post-op reads
  // w there (in the passes path, w is copied before the matmul overwrites it).
  const Array x = uniform_array(1, {64, 48}), g = uniform_array(2, {64, 32});
  auto sgd = [](const Array& w, const Array& x, const Array& g) { return w - dot_general(x, g, {{0}, {0}, {}, {}}) * 0.01f; };
  auto plus = [](const Array& w, const Array& x, const Array& g) { return dot_general(x, g, {{0}, {0}, {}, {}}) - w; };
  for (bool post_ops : {true, false}) {
    CAPTURE(post_ops);
    kernels::cpu::set_epilogue_post_ops(post_ops);
    for (auto f : {std::function<Array(const Array&, const Array&, const Array&)>(sgd),
                   std::function<Array(const Array&, const Array&, const Array&)>(plus)}) {
      auto step = jit(f, donate_argnums<0>);
      Array w = uniform_array(3, {48, 32});
      const std::string text = step.lower(w, x, g).compiled_text();
      CAPTURE(text);
      CHECK(count(text, "dot_general_epilogue") == 1);
      CHECK(step.lower(w, x, g).memory_analysis().alias_bytes == 48 * 32 * 4);
      const Array want = f(w, x, g);
      const void* block = w.raw_data();
      const Array got = step(w, x, g);
      CHECK(got.raw_data() == block);
      check_close(got, want);
      CHECK(w.is_deleted());
    }
  }
  kernels::cpu::set_epilogue_post_ops(true);
  // A donated array that is also the matmul's operand, or added twice, keeps its buffer.
  auto square = jit([](const Array& w) { return matmul(w, w) + w; }, donate_argnums<0>);
  const Array sq = uniform_array(4, {16, 16});
  CHECK(square.lower(sq).memory_analysis().alias_bytes == 0);
  const Array want = matmul(sq, sq) + sq;
  check_close(square(sq), want);
}

TEST_CASE("epilogue: a convolution with its channels innermost takes its bias, scale and tanh") {
  const Array x = uniform_array(1, {4, 10, 10, 6}), w = uniform_array(2, {3, 3, 6, 8}), b = uniform_array(3, {8});
  const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"};
  auto layer = [&](const Array& x, const Array& w) {
    return tanh(conv_general_dilated(x, w, {1, 1}, {{1, 1}, {1, 1}}, {}, {}, nhwc) * 0.5f + b);
  };
  // Two groups of three input channels, strided; and a weight-gradient-shaped update (HWIO out).
  const Array wg = uniform_array(4, {3, 3, 3, 8});
  auto grouped = [&](const Array& x, const Array& w) {
    return conv_general_dilated(x, w, {2, 2}, "SAME", {}, {}, nhwc, 2) + b;
  };
  const Array dy = uniform_array(5, {4, 10, 10, 8}), w0 = uniform_array(6, {3, 3, 6, 8});
  auto update = [&](const Array& x, const Array& dy) {
    return w0 - conv_general_dilated(x, dy, {1, 1}, {{1, 1}, {1, 1}}, {}, {}, {"CHWN", "IHWO", "HWNC"}) * 0.01f;
  };
  struct Case {
    const char* printed;
    std::function<Array(const Array&, const Array&)> f;
    Array a, b;
    float rel;
  };
  const std::vector<Case> cases = {
      {"conv_general_dilated_epilogue[ops=conv_general_dilated,mul(scalar),add(row),tanh]", layer, x, w, 4e-6f},
      {"conv_general_dilated_epilogue[ops=conv_general_dilated,add(row)]", grouped, x, wg, 1e-6f},
      {"conv_general_dilated_epilogue[ops=conv_general_dilated,mul(scalar),sub(full)]", update, x, dy, 1e-6f},
  };
  for (const Case& c : cases) {
    const std::string text = jit(c.f).lower(c.a, c.b).compiled_text();
    CAPTURE(text);
    CHECK(count(text, c.printed) == 1);
    CHECK(count(text, " = ") == 1);
    check_close(jit(c.f)(c.a, c.b), c.f(c.a, c.b), c.rel);
    EpilogueAsPasses passes;
    check_close(jit(c.f)(c.a, c.b), c.f(c.a, c.b), c.rel);
  }
  // Channels first in the result: the bias is not a row of it, nothing fuses.
  auto nchw = [&](const Array& x, const Array& w) {
    return conv_general_dilated(x, w, {1, 1}, "SAME", {}, {}, {"NHWC", "HWIO", "NCHW"}) + reshape(b, {8, 1, 1});
  };
  CHECK(count(jit(nchw).lower(x, w).compiled_text(), "epilogue") == 0);
  check_close(jit(nchw)(x, w), nchw(x, w), 1e-6f);
  // Gradients through a jitted convolution layer with an epilogue.
  auto loss = [&](const Array& w) { return sum(layer(x, w)); };
  check_close(jit(grad(loss))(w), grad(loss)(w), 1e-4f);
}
