// jit's GPU epilogue passes, checked on the host: the program a GPU call runs (Lowered::gpu_text)
// has dot_general + bias row as one dot_general_bias equation where every value in between has
// one reader, and not otherwise (a relu stays elementwise: cuBLASLt's turns NaN into 0), and a
// backward pass's x^T @ g and sum(g, 0) as one dot_general_bias_grad equation; that program
// evaluated on the CPU (each equation bound eagerly, as a GPU call runs them) equals the original
// program. The cuBLASLt calls themselves run in tests/gpu/gpu_test.cpp.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/random.hpp>

#include "helpers/program_values.hpp"
#include "helpers/text_count.hpp"

namespace {
using namespace canopy;

Array uniform_array(std::uint32_t seed, const Shape& s, DType d = DType::f32) {
  return random::uniform(random::key(seed), s, DType::f32, -1, 1).astype(d);
}

// Bit for bit: the CPU form of a fused equation runs the same kernels as the program it replaces.
using test::check_gpu_program_values;
using test::check_same_bits;

using Fn3 = std::function<Array(const Array&, const Array&, const Array&)>;

}  // namespace

TEST_CASE("gpu epilogue: x@w+b and b+x@w become one dot_general_bias, under a relu too; the relu stays elementwise") {
  for (DType d : {DType::f32, DType::bf16, DType::f16}) {
    CAPTURE(name(d));
    const Array x = uniform_array(1, {12, 8}, d), w = uniform_array(2, {8, 6}, d), b = uniform_array(3, {6}, d);
    struct Case {
      Fn3 f;
      int maxes;  // relus left as elementwise max equations
    };
    const std::vector<Case> cases = {
        {[](auto& x, auto& w, auto& b) { return nn::relu(matmul(x, w) + b); }, 1},
        {[](auto& x, auto& w, auto& b) { return matmul(x, w) + b; }, 0},
        {[](auto& x, auto& w, auto& b) { return b + matmul(x, w); }, 0},
        {[](auto& x, auto& w, auto& b) { return maximum(b.reshape({1, 6}) + matmul(x, w), 0); }, 1},
    };
    for (std::size_t i = 0; i < cases.size(); ++i) {
      CAPTURE(i);
      const Lowered l = jit(cases[i].f).lower(x, w, b);
      const std::string text = l.gpu_text();
      CAPTURE(text);
      CHECK(count(text, "dot_general_bias[ops=dot_general,add(row)]") == 1);
      CHECK(count(text, "dot_general[") == 0);
      CHECK(count(text, " add ") == 0);
      CHECK(count(text, " max ") == cases[i].maxes);
      check_gpu_program_values(l, {x, w, b});
    }
  }
}

TEST_CASE("gpu epilogue: batched, rank-3, vmapped and transposed matmuls keep their bias row") {
  const Array b = uniform_array(3, {5});
  auto layer = [](const Array& x, const Array& w, const Array& b) { return nn::relu(matmul(x, w) + b); };
  // A batch axis on both sides: one strided-batched call, the row shared by every batch item.
  const Array xs = uniform_array(1, {3, 4, 6}), ws = uniform_array(2, {3, 6, 5});
  // x of rank 3 against a matrix: a reshape on each side of the dot_general, the bias after it.
  const Array x3 = uniform_array(4, {2, 4, 6}), w = uniform_array(5, {6, 5});
  // g @ w^T + b: the rhs read transposed in place.
  const Array g = uniform_array(6, {7, 6}), wt = uniform_array(7, {5, 6});
  auto back = [](const Array& g, const Array& wt, const Array& b) { return dot_general(g, wt, {{1}, {1}, {}, {}}) + b; };
  struct Case {
    const char* printed;
    Fn3 f;
    Arrays args;
  };
  const std::vector<Case> cases = {
      {"dot_general_bias[ops=dot_general,add(row)]", layer, {xs, ws, b}},
      {"dot_general_bias[ops=dot_general,reshape,add(row)]", layer, {x3, w, b}},
      {"dot_general_bias[ops=dot_general,add(row)]", back, {g, wt, b}},
  };
  for (const Case& c : cases) {
    const Lowered l = jit(c.f).lower(c.args[0], c.args[1], c.args[2]);
    const std::string text = l.gpu_text();
    CAPTURE(text);
    CHECK(count(text, c.printed) == 1);
    CHECK(count(text, "dot_general[") == 0);
    check_gpu_program_values(l, c.args);
  }
  // vmap of a layer over examples: reshape, dot_general, reshape, add, max.
  const Array x = uniform_array(8, {4, 6});
  auto per_example = vmap([&](const Array& xi) { return layer(xi, w, b); });
  const Lowered l = jit(per_example).lower(x);
  const std::string text = l.gpu_text();
  CAPTURE(text);
  CHECK(count(text, "dot_general_bias[ops=dot_general,reshape,add(row)]") == 1);
  check_gpu_program_values(l, {x});
}

TEST_CASE("gpu epilogue: nothing fuses past a value read twice, an addend that is not a row, or other dtypes") {
  const Array x = uniform_array(1, {12, 8}), w = uniform_array(2, {8, 6}), b = uniform_array(3, {6});
  const Array column = uniform_array(4, {12, 1}), full = uniform_array(5, {12, 6});
  struct Case {
    const char* what;
    Fn3 f;
    int fused;              // dot_general_bias equations
    const char* printed;    // the one fused, when there is one
  };
  const std::vector<Case> cases = {
      {"the pre-activation read twice: the bias fuses",
       [](auto& x, auto& w, auto& b) {
         const Array pre = matmul(x, w) + b;
         return pre + nn::relu(pre);
       },
       1, "[ops=dot_general,add(row)]"},
      {"the product read twice", [](auto& x, auto& w, auto&) {
         const Array y = matmul(x, w);
         return nn::relu(y) * y;
       },
       0, ""},
      {"a column", [&](auto& x, auto& w, auto&) { return nn::relu(matmul(x, w) + column); }, 0, ""},
      {"a full addend", [&](auto& x, auto& w, auto&) { return nn::relu(matmul(x, w) + full); }, 0, ""},
      {"a scalar", [](auto& x, auto& w, auto&) { return matmul(x, w) + 2.f; }, 0, ""},
      {"max with 1, not 0", [](auto& x, auto& w, auto&) { return maximum(matmul(x, w), 1.f); }, 0, ""},
      {"relu before the bias", [](auto& x, auto& w, auto& b) { return nn::relu(matmul(x, w)) + b; }, 0, ""},
      {"relu alone", [](auto& x, auto& w, auto& b) { return nn::relu(matmul(x, w)) * b; }, 0, ""},
      {"a subtracted row", [](auto& x, auto& w, auto& b) { return matmul(x, w) - b; }, 0, ""},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const Lowered l = jit(c.f).lower(x, w, b);
    const std::string text = l.gpu_text();
    CAPTURE(text);
    CHECK(count(text, "dot_general_bias[") == c.fused);
    if (c.fused) CHECK(count(text, std::string("dot_general_bias") + c.printed) == 1);
    check_gpu_program_values(l, {x, w, b});
  }
  // A value the program returns is read outside the chain.
  auto both = [](const Array& x, const Array& w, const Array& b) {
    const Array y = matmul(x, w);
    return std::pair{y, nn::relu(y + b)};
  };
  CHECK(count(jit(both).lower(x, w, b).gpu_text(), "dot_general_bias[") == 0);
  auto pre_returned = [](const Array& x, const Array& w, const Array& b) {
    const Array pre = matmul(x, w) + b;
    return std::pair{pre, nn::relu(pre)};
  };
  const std::string text = jit(pre_returned).lower(x, w, b).gpu_text();
  CAPTURE(text);
  CHECK(count(text, "dot_general_bias[ops=dot_general,add(row)]") == 1);
  CHECK(count(text, " max ") == 1);
  // f64 and integers keep dot_general; a bf16 product meeting an f32 bias is converted first.
  auto layer = [](const Array& x, const Array& w, const Array& b) { return nn::relu(matmul(x, w) + b); };
  for (DType d : {DType::f64, DType::i32}) {
    CAPTURE(name(d));
    const Array xd = x.astype(d), wd = w.astype(d), bd = b.astype(d);
    const Lowered l = jit(layer).lower(xd, wd, bd);
    CHECK(count(l.gpu_text(), "dot_general_bias[") == 0);
    check_gpu_program_values(l, {xd, wd, bd});
  }
  const Lowered mixed = jit(layer).lower(x.astype(DType::bf16), w.astype(DType::bf16), b);
  CHECK(count(mixed.gpu_text(), "dot_general_bias[") == 0);
  // Epilogue fusion off, or all fusion off: the GPU program keeps every equation.
  set_epilogue_fusion(false);
  CHECK(count(jit(layer).lower(x, w, b).gpu_text(), "dot_general_bias[") == 0);
  set_epilogue_fusion(true);
  set_elementwise_fusion(false);
  CHECK(count(jit(layer).lower(x, w, b).gpu_text(), "dot_general_bias[") == 0);
  set_elementwise_fusion(true);
  CHECK(count(jit(layer).lower(x, w, b).gpu_text(), "dot_general_bias[") == 1);
}

TEST_CASE("gpu epilogue: the gradient of a relu layer fuses its forward matmul and bias; values match") {
  const Array x = uniform_array(1, {16, 8}), w = uniform_array(2, {8, 4}), b = uniform_array(3, {4});
  auto loss = [&](const Array& w, const Array& b) { return sum(nn::relu(matmul(x, w) + b) * 0.5f); };
  const Lowered l = jit(grad(loss, argnums<0, 1>)).lower(w, b);
  const std::string text = l.gpu_text();
  CAPTURE(text);
  CHECK(count(text, "dot_general_bias[ops=dot_general,add(row)]") == 1);
  check_gpu_program_values(l, {w, b});
}

TEST_CASE("gpu epilogue: a GPU program's pass-made equations run when bound one by one; long chains stay unfused") {
  // The GPU program's equations run when bound one by one (as GPU verification binds them on the
  // CPU), fused_elementwise equations too: their results' avals come from the pass that made them.
  const Array x = uniform_array(1, {6, 5});
  auto f = [](const Array& x) { return tanh(x * 2.f + 1.f) - x; };
  const Lowered l = jit(f).lower(x);
  REQUIRE(count(l.compiled_text(), "fused_elementwise") == 1);
  const Arrays got = detail::eval_program(l.executable->compiled_program(), std::vector<Array>{x});
  const Arrays want = l.executable->run(std::vector<Array>{x});
  check_same_bits(got[0], want[0]);
  // A chain longer than the GPU's fused kernel holds leaves the GPU program's elementwise
  // equations as they are (the matmul's epilogue still fused).
  const Array w = uniform_array(2, {5, 4}), b = uniform_array(3, {4});
  auto long_chain = [](const Array& x, const Array& w, const Array& b) {
    Array y = nn::relu(matmul(x, w) + b);
    for (int i = 0; i < 80; ++i) y = tanh(y) + 0.5f;
    return y;
  };
  const Lowered chain = jit(long_chain).lower(x, w, b);
  const std::string text = chain.gpu_text();
  CHECK(count(text, "dot_general_bias[") == 1);
  CHECK(count(text, "fused_elementwise") == 0);
  CHECK(count(text, " tanh ") == 80);
  check_gpu_program_values(chain, {x, w, b});
}

TEST_CASE("gpu bias gradient: a dense layer's backward pass computes dw and db in one dot_general_bias_grad") {
  for (DType d : {DType::f32, DType::bf16, DType::f16}) {
    CAPTURE(name(d));
    const Array x = uniform_array(1, {16, 8}, d), w = uniform_array(2, {8, 4}, d), b = uniform_array(3, {4}, d);
    const Array y = uniform_array(4, {16, 4}, d);
    // With respect to w and b: dw = x^T @ g and db = sum(g, 0) read the same cotangent g.
    auto loss3 = [&](const Array& x, const Array& w, const Array& b) {
      const Array e = nn::relu(matmul(x, w) + b) - y;
      return sum(e * e) * 0.5f;
    };
    auto loss = [&](const Array& w, const Array& b) { return loss3(x, w, b); };
    const Lowered l = jit(grad(loss, argnums<0, 1>)).lower(w, b);
    std::string text = l.gpu_text();
    CAPTURE(text);
    CHECK(count(text, "dot_general_bias_grad[ops=dot_general,reduce_sum(rhs)]") == 1);
    CHECK(count(text, "dot_general[") == 0);
    CHECK(count(text, "reduce_sum[") == 0);
    check_gpu_program_values(l, {w, b});
    // With respect to x too: dx = g @ w^T contracts g's other axis and stays a dot_general.
    const Lowered l3 = jit(grad(loss3, argnums<0, 1, 2>)).lower(x, w, b);
    text = l3.gpu_text();
    CHECK(count(text, "dot_general_bias_grad[ops=dot_general,reduce_sum(rhs)]") == 1);
    CHECK(count(text, "dot_general[") == 1);
    CHECK(count(text, "reduce_sum[") == 0);
    check_gpu_program_values(l3, {x, w, b});
  }
}

TEST_CASE("gpu bias gradient: every layer of an MLP, g read as the lhs, and either order of the pair") {
  const Array x = uniform_array(1, {32, 8}), w1 = uniform_array(2, {8, 16}), b1 = uniform_array(3, {16});
  const Array w2 = uniform_array(4, {16, 4}), b2 = uniform_array(5, {4});
  auto loss = [&](const Array& w1, const Array& b1, const Array& w2, const Array& b2) {
    const Array h = nn::relu(matmul(x, w1) + b1);
    const Array e = matmul(h, w2) + b2;
    return sum(e * e);
  };
  const Lowered mlp = jit(grad(loss, argnums<0, 1, 2, 3>)).lower(w1, b1, w2, b2);
  std::string text = mlp.gpu_text();
  CAPTURE(text);
  CHECK(count(text, "dot_general_bias_grad[") == 2);
  CHECK(count(text, "reduce_sum[") == 0);
  check_gpu_program_values(mlp, {w1, b1, w2, b2});
  // g^T @ x: g is the lhs, read transposed (k x m); the sum before or after the product.
  const Array g = uniform_array(6, {32, 4});
  using Fn2 = std::function<std::pair<Array, Array>(const Array&, const Array&)>;
  const std::vector<std::pair<const char*, Fn2>> pairs = {
      {"reduce_sum(lhs)", [](const Array& g, const Array& x) { return std::pair{dot_general(g, x, {{0}, {0}, {}, {}}), sum(g, 0)}; }},
      {"reduce_sum(lhs)", [](const Array& g, const Array& x) {
         const Array db = sum(g, 0);
         return std::pair{dot_general(g, x, {{0}, {0}, {}, {}}), db};
       }},
      {"reduce_sum(rhs)", [](const Array& g, const Array& x) {
         const Array db = sum(g, 0);
         return std::pair{dot_general(x, g, {{0}, {0}, {}, {}}), db};
       }},
      // g^T @ g: both operands are g, the rhs's columns are summed.
      {"reduce_sum(rhs)", [](const Array& g, const Array&) { return std::pair{dot_general(g, g, {{0}, {0}, {}, {}}), sum(g, 0)}; }},
  };
  for (const auto& [printed, f] : pairs) {
    const Lowered l = jit(f).lower(g, x);
    text = l.gpu_text();
    CHECK(count(text, std::string("dot_general_bias_grad[ops=dot_general,") + printed + "]") == 1);
    check_gpu_program_values(l, {g, x});
  }
}

TEST_CASE("gpu bias gradient: no fusion over another axis, with batch dims, across an order it needs, or off") {
  const Array x = uniform_array(1, {12, 8}), g = uniform_array(2, {12, 6}), wt = uniform_array(3, {5, 6});
  const Array xs = uniform_array(4, {3, 12, 8}), gs = uniform_array(5, {3, 12, 6});
  using Fn2 = std::function<std::pair<Array, Array>(const Array&, const Array&)>;
  const DotDimensionNumbers over_rows{{0}, {0}, {}, {}};
  struct Case {
    const char* what;
    Fn2 f;
    Arrays args;
  };
  const std::vector<Case> cases = {
      {"g summed over its other axis", [&](const Array& x, const Array& g) { return std::pair{dot_general(x, g, over_rows), sum(g, 1)}; },
       {x, g}},
      {"g summed over both axes", [&](const Array& x, const Array& g) { return std::pair{dot_general(x, g, over_rows), sum(g)}; },
       {x, g}},
      {"the dot contracting g's other axis",
       [&](const Array& g, const Array& wt) { return std::pair{dot_general(g, wt, {{1}, {1}, {}, {}}), sum(g, 0)}; }, {g, wt}},
      {"batch dims", [](const Array& xs, const Array& gs) {
         return std::pair{dot_general(xs, gs, {{1}, {1}, {0}, {0}}), sum(gs, 1)};
       },
       {xs, gs}},
      {"another array summed", [&](const Array& x, const Array& g) { return std::pair{dot_general(x, g, over_rows), sum(g * 2.f, 0)}; },
       {x, g}},
      // The sum is read (to scale x) before the product's other operand exists: no place for both.
      {"the sum read before x is ready", [&](const Array& x, const Array& g) {
         const Array db = sum(g, 0);
         return std::pair{dot_general(x * sum(db), g, over_rows), db};
       },
       {x, g}},
      {"f64", [&](const Array& x, const Array& g) { return std::pair{dot_general(x, g, over_rows), sum(g, 0)}; },
       {x.astype(DType::f64), g.astype(DType::f64)}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const Lowered l = jit(c.f).lower(c.args[0], c.args[1]);
    const std::string text = l.gpu_text();
    CAPTURE(text);
    CHECK(count(text, "dot_general_bias_grad[") == 0);
    check_gpu_program_values(l, c.args);
  }
  // Epilogue fusion off: the pair stays as it is.
  auto layer_grad = grad([&](const Array& w, const Array& b) { return sum(nn::relu(matmul(x, w) + b)); }, argnums<0, 1>);
  const Array w = uniform_array(6, {8, 6}), b = uniform_array(7, {6});
  set_epilogue_fusion(false);
  CHECK(count(jit(layer_grad).lower(w, b).gpu_text(), "dot_general_bias_grad[") == 0);
  set_epilogue_fusion(true);
  CHECK(count(jit(layer_grad).lower(w, b).gpu_text(), "dot_general_bias_grad[") == 1);
}
