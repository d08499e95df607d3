// cond, switch_, while_loop, fori_loop and scan: eager results, behaviour under vmap and
// under differentiation, and their errors.
#include <cmath>
#include <functional>

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

TEST_CASE("scan updates the carries it made in place, never the caller's arrays") {
  // The body swaps its carries, one passed through: at the second step carry a is the caller's
  // own b, which the loop must not donate to the body (whose 2a + x would be written into it).
  struct Pair {
    Array a, b;
  };
  // (Computed, so that each is a whole block of the allocator, which donation could hand on.)
  const Pair init{array({1.0f, 2.0f}) + 0.0f, array({10.0f, 20.0f}) + 0.0f};
  auto swap = [](const Pair& c, const Array& x) { return std::make_pair(Pair{c.b, c.a * 2.0f + x}, c.a + c.b); };
  // Under jit: the scan primitive's loop (eagerly, scan runs f step by step).
  auto [swapped, seen] = jit([&](const Pair& c, const Array& xs) { return scan(swap, c, xs); })(init, zeros({3, 2}));
  check_values(init.a, {1.0, 2.0});
  check_values(init.b, {10.0, 20.0});
  check_values(seen, {11.0, 22.0, 12.0, 24.0, 22.0, 44.0});
  check_values(swapped.a, {20.0, 40.0});
  check_values(swapped.b, {4.0, 8.0});
  // A carry the body makes is updated step after step (in its own block): the values of the loop.
  auto decay = [](const Array& c, const Array& x) {
    const Array next = c * 0.5f + x;
    return std::make_pair(next, next);
  };
  const Array xs = array({{1.0f, 0.0f}, {2.0f, 1.0f}, {0.0f, 4.0f}});
  const Array start = array({8.0f, 8.0f});
  auto [last, trail] = jit([&](const Array& c, const Array& x) { return scan(decay, c, x); })(start, xs);
  check_values(trail, {5.0, 4.0, 4.5, 3.0, 2.25, 5.5});
  check_values(last, {2.25, 5.5});
  check_values(start, {8.0, 8.0});
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

namespace {

bool all_close(const Array& a, const Array& b, double tol = 1e-9) {
  auto x = a.astype(DType::f64).to_vector<double>(), y = b.astype(DType::f64).to_vector<double>();
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::abs(x[i] - y[i]) > tol * (1 + std::abs(y[i]))) return false;
  return true;
}

/// An RNN-like scan: carry' = tanh(carry * w + x), y = carry * x; loss = sum(final) + sum(ys).
Array rnn_loss(const Array& w, const Array& c0, const Array& xs) {
  auto [c, ys] = scan([&](const Array& c, const Array& x) { return std::make_pair(tanh(c * w + x), c * x); }, c0, xs);
  return sum(c) + sum(ys);
}

/// The same computation written as a plain C++ loop of slices (no scan at all).
Array rnn_loss_unrolled(const Array& w, const Array& c0, const Array& xs) {
  Array c = c0, total = zeros({}, DType::f64);
  for (std::int64_t i = 0; i < xs.shape(0); ++i) {
    Array x = reshape(slice(xs, {i, 0}, {i + 1, xs.shape(1)}), {xs.shape(1)});
    total = total + sum(c * x);
    c = tanh(c * w + x);
  }
  return total + sum(c);
}

}  // namespace

TEST_CASE("scan under grad, jit and vmap is one scan primitive whose results equal the unrolled loop") {
  Array w = array({0.5, -0.3, 0.8}), c0 = array({0.1, 0.2, -0.4});
  Array xs = reshape(arange(0.0, 1.2, 0.1, DType::f64), {4, 3});
  auto g = grad(rnn_loss, argnums<0, 1, 2>)(w, c0, xs);
  auto want = grad(rnn_loss_unrolled, argnums<0, 1, 2>)(w, c0, xs);
  CHECK(all_close(std::get<0>(g), std::get<0>(want)));
  CHECK(all_close(std::get<1>(g), std::get<1>(want)));
  CHECK(all_close(std::get<2>(g), std::get<2>(want)));
  CHECK(all_close(jit(rnn_loss)(w, c0, xs), rnn_loss_unrolled(w, c0, xs)));
  CHECK(all_close(jit(grad(rnn_loss))(w, c0, xs), std::get<0>(want)));
  Array ws = stack({w, w * 2.0}, 0);
  Array per_lane = vmap(grad(rnn_loss), in_axes(0, none, none))(ws, c0, xs);
  CHECK(all_close(per_lane, stack({std::get<0>(want), grad(rnn_loss_unrolled)(w * 2.0, c0, xs)}, 0)));
  std::string text = to_string(make_jaxpr(rnn_loss)(w, c0, xs));
  CHECK(text.find("scan[length=4 reverse=False num_consts=1 num_carry=1 jaxpr={ lambda ; ") != std::string::npos);
  // reverse mode: the primal scan, the tangent scan transposed into one reverse scan
  std::string grad_text = to_string(make_jaxpr(grad(rnn_loss))(w, c0, xs));
  CHECK(grad_text.find("reverse=True") != std::string::npos);
}

TEST_CASE("grad through a 10,000-step scan is a loop: its program does not grow with the length") {
  auto loss = [](const Array& w, std::int64_t n) {
    auto [c, ys] = scan([&](const Array& c, const NoXs&) { return std::make_pair(sin(c * w) + 0.5, std::tuple<>{}); },
                        full({16}, 0.1), NoXs{}, n);
    return sum(c);
  };
  Array w = full({16}, 0.9);
  auto size_of = [&](std::int64_t n) {
    return make_jaxpr([&](const Array& v) { return grad([&](const Array& u) { return loss(u, n); })(v); })(w).eqns.size();
  };
  CHECK(size_of(10) == size_of(10000));
  Array g = jit(grad([&](const Array& u) { return loss(u, 10000); }))(w);
  Array g_eager = grad([&](const Array& u) { return loss(u, 10000); })(w);
  CHECK(all_close(g, g_eager, 1e-5));
  CHECK(std::isfinite(g.to_vector<float>()[0]));
}

TEST_CASE("fori_loop under jit is a scan; its gradient matches the eager loop") {
  auto f = [](const Array& x) {
    return fori_loop(0, 5, [](const Array& i, const Array& c) { return c * 0.9 + sin(c) * i.astype(DType::f64); }, x);
  };
  Array x = array({0.3, -1.2});
  CHECK(all_close(jit(f)(x), f(x)));
  CHECK(all_close(jit(grad([&](const Array& v) { return sum(f(v)); }))(x), grad([&](const Array& v) { return sum(f(v)); })(x)));
  CHECK(to_string(make_jaxpr(f)(x)).find("scan[length=5") != std::string::npos);
}

TEST_CASE("while_loop with a predicate known only at run time: a while primitive under jit, jvp and vmap") {
  // Halve x until it is below 1: the trip count depends on the value.
  auto halve = [](const Array& x) {
    return while_loop([](const Array& v) { return sum(v) > 1.0; }, [](const Array& v) { return v * 0.5; }, x);
  };
  Array x = array({3.0, 5.0});
  auto jitted = jit(halve);
  CHECK(all_close(jitted(x), halve(x)));
  CHECK(all_close(jitted(array({100.0, 1.0})), halve(array({100.0, 1.0}))));
  CHECK(jitted.cache_misses() == 1);
  CHECK(to_string(jitted.lower(x).program()).find("while[cond_nconsts=0 body_nconsts=0 cond_jaxpr=") != std::string::npos);
  auto [p1, t1] = jvp(jitted, std::make_tuple(x), std::make_tuple(array({1.0, 0.0})));
  auto [p2, t2] = jvp(halve, std::make_tuple(x), std::make_tuple(array({1.0, 0.0})));
  CHECK(all_close(p1, p2));
  CHECK(all_close(t1, t2));
  Array lanes = array({{3.0, 5.0}, {0.2, 0.1}, {40.0, 0.0}});
  Array got = jit(vmap(halve))(lanes);
  for (int i = 0; i < 3; ++i)
    CHECK(all_close(reshape(slice(got, {i, 0}, {i + 1, 2}), {2}), halve(reshape(slice(lanes, {i, 0}, {i + 1, 2}), {2}))));
  CHECK_THROWS_WITH_AS(jit(grad([&](const Array& v) { return sum(halve(v)); }))(x),
                       doctest::Contains("while_loop: reverse-mode differentiation is not supported"), UnimplementedRule);
}

TEST_CASE("while_loop under jit: a body that changes the carry's shape names the leaf") {
  auto bad = jit([](const Array& x) {
    return while_loop([](const Array& v) { return sum(v) > 1.0; }, [](const Array& v) { return concatenate({v, v}); }, x);
  });
  CHECK_THROWS_WITH_AS(bad(array({3.0})), doctest::Contains("while_loop: carry before and after body_fun"), TypeError);
}

TEST_CASE("a collective inside a scan body under a named vmap reduces over that vmap's lanes") {
  auto f = [](const Array& x) {
    auto [c, ys] = scan([](const Array& c, const Array& xi) { return std::make_pair(c + psum(xi, "i"), c); }, scalar(0.0), x);
    return c;
  };
  Array xs = array({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}});  // 3 lanes of 2 steps
  check_values(vmap(f, axis_name("i"))(xs), {21.0, 21.0, 21.0});
  check_values(jit(vmap(f, axis_name("i")))(xs), {21.0, 21.0, 21.0});
}

TEST_CASE("cond and switch_ with a predicate known only at run time run one branch, also in reverse mode") {
  auto f = [](const Array& x) {
    return cond(x > 0.0, [](const Array& v) { return sqrt(v); }, [](const Array& v) { return -v * 3.0; }, x);
  };
  auto jf = jit(f);
  check_values(jf(scalar(4.0)), {2.0});
  check_values(jf(scalar(-2.0)), {6.0});
  CHECK(jf.cache_misses() == 1);
  CHECK(to_string(jf.lower(scalar(1.0)).program()).find("cond[branch0={ lambda") != std::string::npos);
  // Only the taken branch runs: sqrt of a negative number never happens, so its derivative
  // cannot poison the gradient (as it would through a select of both branches).
  check_values(jit(grad(f))(scalar(-2.0)), {-3.0});
  check_values(jit(grad(f))(scalar(4.0)), {0.25});
  set_debug_nans(true);
  check_values(jf(scalar(-2.0)), {6.0});
  set_debug_nans(false);
  auto g = [](const Array& i, const Array& x) {
    std::vector<std::function<Array(const Array&)>> branches{[](const Array& v) { return v + 1.0; },
                                                             [](const Array& v) { return v * v; },
                                                             [](const Array& v) { return sin(v); }};
    return switch_(i, branches, x);
  };
  auto jg = jit(g);
  check_values(jg(scalar(1), scalar(3.0)), {9.0});
  check_values(jg(scalar(7), scalar(0.5)), {std::sin(0.5)});  // clamped to the last branch
  check_values(jg(scalar(-4), scalar(0.5)), {1.5});          // clamped to the first
  check_values(jit(vmap(g))(array({0, 1, 2}), array({1.0, 2.0, 3.0})), {2.0, 4.0, std::sin(3.0)});
  auto [p, t] = jvp([&](const Array& x) { return jg(scalar(1), x); }, std::make_tuple(scalar(3.0)), std::make_tuple(scalar(1.0)));
  check_values(p, {9.0});
  check_values(t, {6.0});
}

TEST_CASE("cond under jit: branches of different shapes are a TypeError naming the shapes") {
  auto bad = jit([](const Array& x) {
    return cond(sum(x) > 0.0, [](const Array& v) { return v; }, [](const Array& v) { return concatenate({v, v}); }, x);
  });
  CHECK_THROWS_WITH_AS(bad(array({1.0, 2.0})), doctest::Contains("cond: branch outputs"), TypeError);
}
