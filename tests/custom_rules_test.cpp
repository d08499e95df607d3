// custom_jvp, custom_vjp and checkpoint: the rules are used, compose with vmap and nested
// differentiation, and wrap code the tracers cannot see (an external routine on host data).
#include <cmath>
#include <vector>

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

// log(1 + e^x) whose derivative is the stable logistic(x), not e^x / (1 + e^x) (inf / inf).
auto log1pexp = custom_jvp([](const Array& x) { return log1p(exp(x)); },
                           [](const auto& primals, const auto& tangents) {
                             const Array& x = std::get<0>(primals);
                             const Array& t = std::get<0>(tangents);
                             return std::make_pair(log1p(exp(x)), t * logistic(x));
                           });

// An "external" routine: reads host memory, so no tracer can pass through it.
std::vector<double> host_cube(const std::vector<double>& v) {
  std::vector<double> r;
  for (double x : v) r.push_back(x * x * x);
  return r;
}
Array external_cube(const Array& x) { return array(host_cube(x.to_vector<double>()), x.shape()); }

auto cube = custom_vjp([](const Array& x) { return external_cube(x); },
                       [](const Array& x) { return std::make_pair(external_cube(x), x); },
                       [](const Array& x, const Array& ct) { return std::make_tuple(ct * 3.0 * x * x); });

}  // namespace

TEST_CASE("custom_jvp's rule replaces differentiation through the function") {
  auto g = grad([](const Array& x) { return sum(log1pexp(x)); });
  check_values(g(array({0.0, 100.0, -100.0}).astype(DType::f32)), {0.5, 1.0, 0.0});
  check_values(log1pexp(array({0.0})), {std::log(2.0)});
  auto [y, t] = jvp(log1pexp, std::make_tuple(scalar(2.0)), std::make_tuple(scalar(3.0)));
  check_values(t, {3.0 / (1.0 + std::exp(-2.0))});
  check_values(grad(grad([](const Array& x) { return log1pexp(x); }))(scalar(0.0)), {0.25});
}

TEST_CASE("custom_jvp composes with vmap in both orders") {
  Array xs = array({0.0, 100.0, -1.0}).astype(DType::f32);
  auto g = grad([](const Array& x) { return log1pexp(x); });
  check_values(vmap(g)(xs), {0.5, 1.0, 1.0 / (1.0 + std::exp(1.0))}, 1e-5);
  auto gs = grad([](const Array& x) { return sum(vmap(log1pexp)(x)); });
  check_values(gs(xs), {0.5, 1.0, 1.0 / (1.0 + std::exp(1.0))}, 1e-5);
}

TEST_CASE("custom_vjp gives an external routine a gradient") {
  Array x = array({1.0, -2.0, 0.5});
  check_values(cube(x), {1.0, -8.0, 0.125});
  auto g = grad([](const Array& v) { return sum(cube(v) * 2.0); });
  check_values(g(x), {6.0, 24.0, 1.5});
}

TEST_CASE("custom_vjp composes with vmap in both orders when its rules are traceable") {
  // Under vmap the forward pass sees batched tracers, so here it is written with Array ops
  // (an external routine would need to handle a batch itself).
  auto cube_ops = custom_vjp([](const Array& x) { return x * x * x; },
                             [](const Array& x) { return std::make_pair(x * x * x, x); },
                             [](const Array& x, const Array& ct) { return std::make_tuple(ct * 3.0 * x * x); });
  Array x = array({1.0, -2.0, 0.5});
  check_values(vmap(grad([&](const Array& v) { return cube_ops(v); }))(x), {3.0, 12.0, 0.75});
  check_values(grad([&](const Array& v) { return sum(vmap(cube_ops)(v)); })(x), {3.0, 12.0, 0.75});
}

TEST_CASE("forward mode through a custom_vjp function is a TypeError, as in jax") {
  CHECK_THROWS_WITH_AS(jvp(cube, std::make_tuple(array({1.0})), std::make_tuple(array({1.0}))),
                       doctest::Contains("custom_vjp"), TypeError);
}

TEST_CASE("custom_vjp's bwd may rewrite the cotangent (gradient clipping)") {
  auto clip_grad = custom_vjp([](const Array& x) { return x; }, [](const Array& x) { return std::make_pair(x, 0); },
                              [](int, const Array& ct) { return std::make_tuple(minimum(maximum(ct, -1.0), 1.0)); });
  auto g = grad([&](const Array& x) { return sum(clip_grad(x) * array({5.0, 0.5, -3.0})); });
  check_values(g(array({1.0, 1.0, 1.0})), {1.0, 0.5, -1.0});
}

TEST_CASE("checkpoint recomputes in the backward pass and gives the same gradients") {
  auto block = [](const Array& w, const Array& x) { return tanh(matmul(x, w)) * 2.0; };
  Array w = array({{0.5, -0.2}, {0.1, 0.3}});
  Array x = array({{1.0, 2.0}, {-1.0, 0.5}});
  auto plain = grad([&](const Array& ww) { return sum(block(ww, block(ww, x))); });
  auto remat = grad([&](const Array& ww) {
    auto cb = checkpoint(block);
    return sum(cb(ww, cb(ww, x)));
  });
  check_values(remat(w), plain(w).to_vector<double>());
}

TEST_CASE("custom_vjp: an empty Array cotangent is jax's None, a zero (for integer arguments)") {
  auto scaled = custom_vjp([](const Array& x, const Array& n) { return x * n.astype(DType::f32); },
                           [](const Array& x, const Array& n) { return std::make_pair(x * n.astype(DType::f32), n); },
                           [](const Array& n, const Array& ct) { return std::make_tuple(ct * n.astype(DType::f32), Array()); });
  Array g = grad([&](const Array& x) { return sum(scaled(x, scalar(3))); })(array({1.f, 2.f}));
  CHECK(g.to_vector<float>() == std::vector<float>{3.f, 3.f});
}
