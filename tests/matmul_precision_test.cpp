// lax's precision argument and jax.default_matmul_precision: the params dot_general and
// conv_general_dilated carry (printed, hashed, part of jit's key), the rules that hand them to the
// products they derive, the CPU's results (exact at every precision), the scopes and the names.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/core/primitive.hpp>

#include "helpers/error_message.hpp"

using namespace canopy;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// The params text of every equation of `p` applying primitive `name` (control flow included).
std::vector<std::string> params_of(const Program& p, const std::string& name) {
  std::vector<std::string> out;
  for (const Eqn& e : p.eqns)
    if (e.prim->name == name) out.push_back(e.prim->params_to_string(e.params_ref()));
  return out;
}

const ConvDimensionNumbers kNhwc{"NHWC", "HWIO", "NHWC"};

Array conv_at(const Array& x, const Array& w, const PrecisionConfig& p) {
  return conv_general_dilated(x, w, {1, 1}, "SAME", {}, {}, kNhwc, 1, p);
}

}  // namespace

TEST_CASE("precision: params print as lax's (None, or the operands' pair) and the names parse as JAX's") {
  const Array a = ones({2, 3}), b = ones({3, 4});
  auto printed = [&](const PrecisionConfig& p) {
    return params_of(make_jaxpr([&](const Array& x, const Array& y) { return dot_general(x, y, {{1}, {0}, {}, {}}, p); })(a, b),
                     "dot_general");
  };
  REQUIRE(printed({}).size() == 1);
  CHECK(contains(printed({})[0], "precision=None"));
  CHECK(contains(printed(Precision::high)[0], "precision=(HIGH, HIGH)"));
  CHECK(contains(printed({Precision::default_, Precision::highest})[0], "precision=(DEFAULT, HIGHEST)"));
  CHECK(contains(printed("tensorfloat32")[0], "precision=(HIGH, HIGH)"));
  CHECK(contains(printed(std::string("float32"))[0], "precision=(HIGHEST, HIGHEST)"));
  const Program conv = make_jaxpr([](const Array& x, const Array& w) { return conv_at(x, w, Precision::highest); })(
      ones({1, 4, 4, 2}), ones({3, 3, 2, 3}));
  CHECK(contains(params_of(conv, "conv_general_dilated").at(0), "precision=(HIGHEST, HIGHEST)"));

  CHECK(parse_precision("bfloat16") == Precision::default_);
  CHECK(parse_precision("fastest") == Precision::default_);
  CHECK(parse_precision("bfloat16_3x") == Precision::high);
  CHECK(parse_precision("high") == Precision::high);
  CHECK(parse_precision("highest") == Precision::highest);
  CHECK(parse_precision("HIGHEST") == Precision::highest);
  CHECK(to_string(Precision::default_) == "DEFAULT");
}

TEST_CASE("precision: an unknown name is a ValueError naming it, from the argument, the setter and the scope") {
  const std::string msg = error_message<ValueError>([] { PrecisionConfig p("tf32"); });
  CHECK(contains(msg, "precision"));
  CHECK(contains(msg, "\"tf32\""));
  CHECK(contains(msg, "tensorfloat32"));  // the hint lists the names
  CHECK(contains(error_message<ValueError>([] { parse_precision("Highest", "dot_general"); }), "dot_general: precision"));
  const Array a = ones({2, 2});
  CHECK_THROWS_AS(matmul(a, a, "exact"), ValueError);
  CHECK_THROWS_AS(set_default_matmul_precision("float64"), ValueError);
  CHECK_THROWS_AS(DefaultMatmulPrecision("int8"), Error);
  CHECK_FALSE(default_matmul_precision().has_value());  // nothing was changed by the failed calls
}

TEST_CASE("precision: the default applies where a call names none; scopes nest and restore, the setter sets the process's") {
  CHECK_FALSE(default_matmul_precision().has_value());
  const Array a = ones({2, 3}), b = ones({3, 4});
  auto text = [&] {
    return params_of(make_jaxpr([](const Array& x, const Array& y) { return matmul(x, y); })(a, b), "dot_general").at(0);
  };
  {
    DefaultMatmulPrecision outer("tensorfloat32");
    CHECK(default_matmul_precision() == OperandPrecision(std::pair{Precision::high, Precision::high}));
    CHECK(contains(text(), "precision=(HIGH, HIGH)"));
    {
      DefaultMatmulPrecision inner(Precision::highest);
      CHECK(contains(text(), "precision=(HIGHEST, HIGHEST)"));
      // A call's own precision wins over the default.
      const Program p = make_jaxpr([](const Array& x, const Array& y) { return matmul(x, y, Precision::high); })(a, b);
      CHECK(contains(params_of(p, "dot_general").at(0), "precision=(HIGH, HIGH)"));
      {
        DefaultMatmulPrecision unset({});  // jax.default_matmul_precision(None)
        CHECK(contains(text(), "precision=None"));
      }
      CHECK(contains(text(), "precision=(HIGHEST, HIGHEST)"));
    }
    CHECK(contains(text(), "precision=(HIGH, HIGH)"));
  }
  CHECK(contains(text(), "precision=None"));

  set_default_matmul_precision("float32");
  CHECK(contains(text(), "precision=(HIGHEST, HIGHEST)"));
  {
    DefaultMatmulPrecision scope(Precision::high);  // a scope overrides the process's default...
    CHECK(contains(text(), "precision=(HIGH, HIGH)"));
  }
  CHECK(contains(text(), "precision=(HIGHEST, HIGHEST)"));  // ...which comes back after it
  set_default_matmul_precision({});
  CHECK_FALSE(default_matmul_precision().has_value());
}

TEST_CASE("precision: equal params hash and compare equal; another precision is another key") {
  const Array a = ones({2, 3}), b = ones({3, 4});
  auto eqn_of = [&](const PrecisionConfig& p) {
    const Program prog = make_jaxpr([&](const Array& x, const Array& y) { return dot_general(x, y, {{1}, {0}, {}, {}}, p); })(a, b);
    REQUIRE(prog.eqns.size() == 1);
    return prog.eqns[0];
  };
  const Eqn none = eqn_of({}), high = eqn_of(Precision::high), high2 = eqn_of("tensorfloat32"),
            highest = eqn_of(Precision::highest), mixed = eqn_of({Precision::high, Precision::highest});
  const PrimitiveInfo& p = *none.prim;
  CHECK(p.params_equal(high.params_ref(), high2.params_ref()));
  CHECK(p.params_hash(high.params_ref()) == p.params_hash(high2.params_ref()));
  for (const Eqn* other : {&none, &highest, &mixed}) {
    CHECK_FALSE(p.params_equal(high.params_ref(), other->params_ref()));
    CHECK(p.params_hash(high.params_ref()) != p.params_hash(other->params_ref()));
  }
}

TEST_CASE("precision: jit keys its cache on the default (baked into the program), and a call's own precision reaches the program") {
  const Array a = random::uniform(random::key(0), {4, 5}), b = random::uniform(random::key(1), {5, 3});
  auto f = jit([](const Array& x, const Array& y) { return matmul(x, y); });
  const Array plain = f(a, b);
  CHECK(f.cache_size() == 1);
  CHECK(contains(f.lower(a, b).as_text(), "precision=None"));
  {
    DefaultMatmulPrecision scope("tensorfloat32");
    const Array tf32 = f(a, b);
    CHECK(f.cache_size() == 2);  // traced again: the default is part of the program
    CHECK(contains(f.lower(a, b).as_text(), "precision=(HIGH, HIGH)"));
    CHECK(tf32.to_vector<float>() == plain.to_vector<float>());  // the CPU computes f32 exactly at every precision
    (void)f(a, b);
    CHECK(f.cache_size() == 2);
  }
  (void)f(a, b);
  CHECK(f.cache_size() == 2);  // the first program again
}

TEST_CASE("precision: the rules carry it into the products they derive (jvp, transpose, vmap), as JAX's do") {
  const Array x = random::uniform(random::key(2), {2, 6, 6, 3}), w = random::uniform(random::key(3), {3, 3, 3, 4});
  auto loss = [](const Array& l, const Array& r) { return sum(conv_at(l, r, Precision::high) * 2.0f); };
  const Program g = make_jaxpr(grad(loss, argnums<0, 1>))(x, w);
  const auto convs = params_of(g, "conv_general_dilated");
  REQUIRE(convs.size() == 3);  // the forward, the input gradient and the filter gradient
  for (const std::string& c : convs) CHECK(contains(c, "precision=(HIGH, HIGH)"));
  // ...even when the gradient is taken under another default.
  {
    DefaultMatmulPrecision scope(Precision::highest);
    for (const std::string& c : params_of(make_jaxpr(grad(loss, argnums<0, 1>))(x, w), "conv_general_dilated"))
      CHECK(contains(c, "precision=(HIGH, HIGH)"));
  }

  const Array a = random::uniform(random::key(4), {4, 5}), b = random::uniform(random::key(5), {5, 3});
  auto mm = [](const Array& l, const Array& r) { return sum(matmul(l, r, {Precision::high, Precision::highest})); };
  const auto dots = params_of(make_jaxpr(grad(mm, argnums<0, 1>))(a, b), "dot_general");
  REQUIRE(dots.size() == 3);
  for (const std::string& d : dots) CHECK(contains(d, "precision=(HIGH, HIGHEST)"));
  const auto jvps = params_of(make_jaxpr([&](const Array& l, const Array& r) {
                                return jvp([](const Array& u, const Array& v) { return matmul(u, v, Precision::high); },
                                           std::tuple{l, r}, std::tuple{l, r})
                                    .second;
                              })(a, b),
                              "dot_general");
  REQUIRE(jvps.size() == 3);
  for (const std::string& d : jvps) CHECK(contains(d, "precision=(HIGH, HIGH)"));
  const auto batched = params_of(
      make_jaxpr(vmap([](const Array& l, const Array& r) { return matmul(l, r, Precision::highest); }))(ones({2, 4, 5}), ones({2, 5, 3})),
      "dot_general");
  REQUIRE(batched.size() == 1);
  CHECK(contains(batched[0], "precision=(HIGHEST, HIGHEST)"));
  const auto batched_conv = params_of(
      make_jaxpr(vmap([](const Array& l, const Array& r) { return conv_at(l, r, Precision::high); }))(ones({2, 1, 5, 5, 2}),
                                                                                                        ones({2, 3, 3, 2, 2})),
      "conv_general_dilated");
  REQUIRE(batched_conv.size() == 1);
  CHECK(contains(batched_conv[0], "precision=(HIGH, HIGH)"));
}

TEST_CASE("precision: the CPU computes f32 exactly at every precision: matmul, dot, einsum, convolution and gradients agree bit for bit") {
  const Array a = random::uniform(random::key(6), {7, 33}, DType::f32, -1.0, 1.0);
  const Array b = random::uniform(random::key(7), {33, 5}, DType::f32, -1.0, 1.0);
  const Array x = random::uniform(random::key(8), {2, 6, 6, 3}, DType::f32, -1.0, 1.0);
  const Array w = random::uniform(random::key(9), {3, 3, 3, 4}, DType::f32, -1.0, 1.0);
  const std::vector<float> mm = matmul(a, b).to_vector<float>(), cv = conv_at(x, w, {}).to_vector<float>();
  auto conv_grad = [&](const PrecisionConfig& p) {
    return grad([&](const Array& k) { return sum(conv_at(x, k, p) * conv_at(x, k, p)); })(w).to_vector<float>();
  };
  const std::vector<float> cg = conv_grad({});
  for (const PrecisionConfig& p : {PrecisionConfig(Precision::default_), PrecisionConfig(Precision::high),
                                   PrecisionConfig(Precision::highest), PrecisionConfig(Precision::high, Precision::highest)}) {
    const std::string_view lhs = to_string(p.operands->first), rhs = to_string(p.operands->second);
    CAPTURE(lhs);
    CAPTURE(rhs);
    CHECK(matmul(a, b, p).to_vector<float>() == mm);
    CHECK(dot(a, b, p).to_vector<float>() == mm);
    CHECK(einsum("ij,jk->ik", a, b, p).to_vector<float>() == mm);
    CHECK(dot_general(a, b, {{1}, {0}, {}, {}}, p).to_vector<float>() == mm);
    CHECK(jit([&](const Array& l, const Array& r) { return matmul(l, r, p); })(a, b).to_vector<float>() == mm);
    CHECK(conv_at(x, w, p).to_vector<float>() == cv);
    CHECK(conv_grad(p) == cg);
  }
}
