// grad, value_and_grad, jvp and vjp on the caller's own pytrees, their compositions, and the
// errors they raise. Values are checked against closed forms. Last, where reverse mode puts the
// zeros it makes.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <boost/hana/define_struct.hpp>
#include <canopy/canopy.hpp>
#include <canopy/nn.hpp>
#include <canopy/transforms.hpp>

#include "../transforms/src/core/array_impl.hpp"
#include "helpers/cpu_devices.hpp"
#include "helpers/error_message.hpp"

using namespace canopy;

namespace {

struct Linear {
  Array w, b;
  int features = 0;  // a non-Array leaf: passes through, its "gradient" is 0
};

struct Model {
  BOOST_HANA_DEFINE_STRUCT(Model, (std::vector<Linear>, layers), (std::map<std::string, Array>, extra));
};

std::vector<double> values(const Array& x) { return x.astype(DType::f64).to_vector<double>(); }

void check_values(const Array& got, const std::vector<double>& want, double tol = 1e-5) {
  auto g = values(got);
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    CHECK(g[i] == doctest::Approx(want[i]).epsilon(tol));
  }
}

Array rosenbrock(const Array& p) {
  Array x = reshape(p, {2});
  Array a = sum(array({1.0, 0.0}) * x);  // x0
  Array b = sum(array({0.0, 1.0}) * x);  // x1
  return (1.0 - a) * (1.0 - a) + 100.0 * (b - a * a) * (b - a * a);
}

}  // namespace

TEST_CASE("grad of a sum of squares is twice the input") {
  auto g = grad([](const Array& x) { return sum(x * x); });
  check_values(g(array({1.f, -2.f, 3.f})), {2, -4, 6});
}

TEST_CASE("grad returns the parameters' own type, through vectors, maps and aggregates") {
  Model m;
  m.layers = {{array({{1.f, 2.f}, {3.f, 4.f}}), array({0.5f, -0.5f}), 2}};
  m.extra["scale"] = scalar(3.f);
  Array x = array({1.f, -1.f});
  auto loss = [&](const Model& mm) {
    const Linear& l = mm.layers[0];
    Array h = matmul(x, l.w) + l.b;  // [1-3, 2-4] + b = [-1.5, -2.5]
    return sum(h * h) * mm.extra.at("scale");
  };
  Model g = grad(loss)(m);
  // dL/dh = 2 h s = [-9, -15]; dL/dw = outer(x, dL/dh); dL/db = dL/dh; dL/ds = sum(h^2) = 8.5.
  check_values(g.layers[0].w, {-9, -15, 9, 15});
  check_values(g.layers[0].b, {-9, -15});
  check_values(g.extra.at("scale"), {8.5});
  CHECK(g.layers[0].features == 0);
  CHECK(g.layers[0].w.dtype() == DType::f32);
}

TEST_CASE("value_and_grad with several argnums and has_aux") {
  auto f = [](const Array& x, const Array& y, int power) {
    Array loss = sum(x * y) * static_cast<double>(power);
    return std::make_pair(loss, std::make_pair(x + y, power));
  };
  auto vg = value_and_grad(f, argnums<0, 1>, has_aux);
  auto [value, grads] = vg(array({1.0, 2.0}), array({3.0, 4.0}), 2);
  auto [loss, aux] = value;
  CHECK(loss.item<double>() == 22.0);
  check_values(aux.first, {4, 6});
  CHECK(aux.second == 2);
  check_values(std::get<0>(grads), {6, 8});
  check_values(std::get<1>(grads), {2, 4});
  CHECK(!aux.first.is_tracer());
}

TEST_CASE("grad of grad of x cubed is 6x; grad composes to third order") {
  auto f = [](const Array& x) { return x * x * x; };
  auto d1 = grad(f);
  auto d2 = grad([&](const Array& x) { return d1(x); });
  auto d3 = grad([&](const Array& x) { return d2(x); });
  Array x = scalar(2.0);
  CHECK(d1(x).item<double>() == doctest::Approx(12.0));
  CHECK(d2(x).item<double>() == doctest::Approx(12.0));
  CHECK(d3(x).item<double>() == doctest::Approx(6.0));
}

TEST_CASE("nested derivatives do not confuse perturbations") {
  // d/dx [x * (d/dy (x + y))] = d/dx [x * 1] = 1; perturbation confusion would give 2.
  auto outer = grad([](const Array& x) {
    auto inner = grad([&](const Array& y) { return x + y; });
    return x * inner(x);
  });
  CHECK(outer(scalar(3.0)).item<double>() == doctest::Approx(1.0));
}

TEST_CASE("jvp of grad gives Hessian-vector products of the Rosenbrock function") {
  auto g = grad(rosenbrock);
  double x = 0.5, y = -0.25;
  Array p = array({x, y});
  // H = [[2 - 400 (y - x^2) + 800 x^2, -400 x], [-400 x, 200]].
  double h00 = 2 - 400 * (y - x * x) + 800 * x * x, h01 = -400 * x, h11 = 200;
  auto [gp, hv0] = jvp(g, std::tuple{p}, std::tuple{array({1.0, 0.0})});
  auto [gp2, hv1] = jvp(g, std::tuple{p}, std::tuple{array({0.0, 1.0})});
  check_values(gp, {-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)});
  check_values(hv0, {h00, h01});
  check_values(hv1, {h01, h11});
  // Reverse over reverse gives the same rows.
  auto row0 = grad([&](const Array& q) { return sum(g(q) * array({1.0, 0.0})); });
  check_values(row0(p), {h00, h01});
}

TEST_CASE("jvp on pytrees returns outputs and tangents in the result's type") {
  auto f = [](const std::pair<Array, Array>& xy) { return std::make_pair(sin(xy.first) * xy.second, xy.second); };
  // std::make_tuple, not std::tuple{...}: CTAD turns tuple{pair} into a 2-tuple.
  auto [out, tangent] = jvp(f, std::make_tuple(std::make_pair(scalar(0.0), scalar(2.0))),
                            std::make_tuple(std::make_pair(scalar(1.0), scalar(0.0))));
  CHECK(out.first.item<double>() == doctest::Approx(0.0));
  CHECK(tangent.first.item<double>() == doctest::Approx(2.0));  // cos(0) * 2
  CHECK(tangent.second.item<double>() == doctest::Approx(0.0));
}

TEST_CASE("vjp of a vector function pulls back cotangents; it can be called twice") {
  Array a = array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  auto [y, pullback] = vjp([&](const Array& x) { return matmul(a, x); }, array({1.0, 1.0, 1.0}));
  check_values(y, {6, 15});
  auto [g1] = pullback(array({1.0, 0.0}));
  auto [g2] = pullback(array({0.0, 1.0}));
  check_values(g1, {1, 2, 3});
  check_values(g2, {4, 5, 6});
}

TEST_CASE("linear regression's gradient matches the normal-equation form") {
  Array X = array({{1.0, 2.0}, {3.0, 4.0}, {5.0, 7.0}});
  Array y = array({1.0, 0.0, 2.0});
  Array w = array({0.5, -0.25});
  auto loss = [&](const Array& ww) { return mean(square(matmul(X, ww) - y)); };
  Array r = matmul(X, w) - y;
  Array want = matmul(transpose(X), r) * (2.0 / 3.0);
  check_values(grad(loss)(w), values(want));
}

TEST_CASE("gradients flow through max, where, reshape, broadcasting and reductions") {
  auto f = [](const Array& x) {
    Array m = max(x, Axes{{1}});                     // row maxima
    Array z = where(x > 0.0, x, x * 0.1);           // leaky relu
    return sum(m) + sum(reshape(z, {6}) * array({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}));
  };
  Array x = array({{1.0, -2.0, 3.0}, {-4.0, 5.0, 0.5}});
  check_values(grad(f)(x), {1, 0.2, 3 + 1, 0.4, 5 + 1, 6});
}

TEST_CASE("grad of a non-scalar or integer result is a TypeError naming grad and the shape") {
  auto vec = grad([](const Array& x) { return x * 2.0; });
  CHECK_THROWS_WITH_AS(vec(array({1.0, 2.0})), doctest::Contains("grad: f's result"), TypeError);
  CHECK_THROWS_WITH_AS(vec(array({1.0, 2.0})), doctest::Contains("f64[2]"), TypeError);
  auto integer = grad([](const Array& x) { return sum(x.astype(DType::i32)); });
  CHECK_THROWS_AS(integer(array({1.0, 2.0})), TypeError);
}

TEST_CASE("a tracer that escapes its transformation is a TracerError when used") {
  Array leaked;
  auto g = grad([&](const Array& x) {
    leaked = x;
    return sum(x * x);
  });
  g(array({1.0, 2.0}));
  REQUIRE(leaked.is_tracer());
  CHECK_THROWS_WITH_AS(leaked + 1.0, doctest::Contains("escaped"), TracerError);
}

TEST_CASE("gradients through take (gather) accumulate at repeated indices, as scatter-add") {
  Array table = array({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}});
  Array idx = array({2, 0, 2});
  auto g = grad([&](const Array& t) { return sum(take(t, idx, 0) * array({{1.0, 1.0}, {10.0, 10.0}, {100.0, 100.0}})); });
  check_values(g(table), {10, 10, 0, 0, 101, 101});
}

namespace {
struct Dense {  // a plain, non-template struct: every transform must accept it
  Array w, b;
};
Array dense_loss(const Dense& d) { return sum(tanh(d.w * d.b)); }
}  // namespace

TEST_CASE("jvp, vjp and linearize take a plain struct and jvp(grad) gives its Hessian-vector product") {
  const Dense p{array({0.5, -1.0}), array({2.0, 0.25})}, v{array({1.0, 0.0}), array({0.0, 1.0})};
  auto [y, t] = jvp(dense_loss, std::make_tuple(p), std::make_tuple(v));
  // d/dw = b sech^2(wb), d/db = w sech^2(wb): tangent = sech^2(w0 b0) b0 * 1 + sech^2(w1 b1) w1 * 1.
  auto sech2 = [](double z) { return 1.0 / (std::cosh(z) * std::cosh(z)); };
  CHECK(t.item<double>() == doctest::Approx(sech2(1.0) * 2.0 + sech2(-0.25) * -1.0));
  auto [g, hv] = jvp(grad(dense_loss), std::make_tuple(p), std::make_tuple(v));
  CHECK(g.w.shape() == Shape{2});
  CHECK(hv.b.shape() == Shape{2});
  auto [out, pullback] = vjp(dense_loss, p);
  const Dense ct = std::get<0>(pullback(scalar(1.0)));
  CHECK(ct.w.to_vector<double>() == g.w.to_vector<double>());
  auto [out2, f_jvp] = linearize(dense_loss, p);
  CHECK(f_jvp(v).item<double>() == doctest::Approx(t.item<double>()));
}

TEST_CASE("mismatched tangents and cotangents are named by key path; int inputs to grad are TypeErrors") {
  const Dense p{array({0.5, -1.0}), array({2.0, 0.25})};
  const std::string shape = error_message([&] { jvp(dense_loss, std::make_tuple(p), std::make_tuple(Dense{p.w, array({1.0})})); });
  CHECK(shape.find("jvp: tangent (args[0].b)") == 0);
  CHECK(shape.find("f64[1]") != std::string::npos);
  CHECK_THROWS_AS(jvp(dense_loss, std::make_tuple(p), std::make_tuple(Dense{p.w, p.b.astype(DType::f32)})), TypeError);
  auto [y, pullback] = vjp([](const Array& x) { return std::vector<Array>{x * 2.0, sum(x)}; }, array({1.0, 2.0}));
  const std::string ct = error_message([&] { pullback(std::vector<Array>{array({1.0, 1.0}), array({1.0})}); });
  CHECK(ct.find("vjp: cotangent (output[1])") == 0);
  CHECK_THROWS_AS(pullback(std::vector<Array>{array({1.0f, 1.0f}), scalar(1.0)}), TypeError);
  CHECK_THROWS_AS(pullback(std::vector<Array>{array({1.0, 1.0})}), TreeError);
  // jax: "grad requires real- or complex-valued inputs"; here the message names the leaf.
  const std::string integer = error_message([] { grad([](const Array& x) { return sum(x.astype(DType::f32)); })(array({1, 2, 3})); });
  CHECK(integer.find("grad: input (args[0])") == 0);
  CHECK(integer.find("i32[3] is not a float array") != std::string::npos);
}

struct Scaled {  // a plain aggregate: PFR names its fields
  Array w;
  float scale = 2.0f;
  int steps = 3;
};

Array scaled_loss(const Scaled& p) { return sum(p.w * p.w) * p.scale; }

TEST_CASE("a float leaf of a differentiated argument is a TypeError naming its path; int leaves come back 0") {
  const Scaled p{array({1.0f, -2.0f}), 2.0f, 3};
  // jax would trace the float; a C++ float is invisible to the tracers, so 0 would be silently wrong.
  const std::string g = error_message([&] { grad(scaled_loss)(p); });
  CHECK(g.find("grad: input (args[0].scale)") == 0);
  CHECK(g.find("plain floating-point value (2)") != std::string::npos);
  CHECK(g.find("scalar(x)") != std::string::npos);
  CHECK_THROWS_AS(value_and_grad(scaled_loss)(p), TypeError);
  CHECK(error_message([&] { vjp(scaled_loss, p); }).find("vjp: input (args[0].scale)") == 0);
  CHECK(error_message([&] { jvp(scaled_loss, std::make_tuple(p), std::make_tuple(p)); }).find("jvp: input (args[0].scale)") == 0);
  CHECK_THROWS_AS(linearize(scaled_loss, p), TypeError);
  CHECK_THROWS_AS(jacrev(scaled_loss)(p), TypeError);
  CHECK_THROWS_AS(jacfwd(scaled_loss)(p), TypeError);
  auto two = [](const Array& x, double s) { return sum(x) * s; };
  CHECK(error_message([&] { grad(two, argnums<0, 1>)(p.w, 0.5); }).find("grad: input (args[1])") == 0);
  // Outside argnums a float is a constant of f, as in jax.
  CHECK(grad(two)(p.w, 0.5).to_vector<float>() == std::vector<float>{0.5f, 0.5f});
  // Integer leaves: f is piecewise constant in them; their gradient field is value-initialised.
  auto int_leaf = [](const Linear& l) { return sum(l.w) * static_cast<double>(l.features); };
  const Linear lin{array({1.0, 2.0}), array({0.0}), 4};
  const Linear gl = grad(int_leaf)(lin);
  CHECK(gl.features == 0);
  CHECK(values(gl.w) == std::vector<double>{4.0, 4.0});
}

TEST_CASE("relu's derivative is 0 at 0, as jax.nn.relu's custom rule; NaN and -inf pass as max does") {
  const Array x = array({-1.0, 0.0, 2.0});
  CHECK(values(grad([](const Array& v) { return sum(nn::relu(v)); })(x)) == std::vector<double>{0.0, 0.0, 1.0});
  CHECK(values(vmap(grad([](const Array& v) { return nn::relu(v); }))(x)) == std::vector<double>{0.0, 0.0, 1.0});
  const auto r = values(nn::relu(array({std::nan(""), -HUGE_VAL, 3.0})));
  CHECK(std::isnan(r[0]));
  CHECK(r[1] == 0.0);
  CHECK(r[2] == 3.0);
}

TEST_CASE("grad of abs is 1 at 0, as jax's select(x >= 0, g, -g)") {
  auto g = grad([](const Array& x) { return abs(x); });
  CHECK(g(scalar(0.0)).item<double>() == 1.0);
  CHECK(g(scalar(-2.0)).item<double>() == -1.0);
  CHECK(g(scalar(3.0f)).item<float>() == 1.0f);
}

// Where reverse mode puts the zeros it makes: the gradient of an input is a value like that input,
// on its device and committed as it is (jax instantiates a symbolic zero against the input), and a
// transpose rule's all-zero cotangent stays beside the cotangent it came from. Two virtual CPU
// devices stand in for a GPU here; the GPU suite's registry walk checks cuda:0.

namespace {

bool committed(const Array& x) { return x.impl()->committed; }

}  // namespace

TEST_CASE("vjp: an input no cotangent reaches gets its zero gradient on its own device, committed as it is") {
  CpuDevices devices(2);
  const Device cpu1 = Device::cpu(1);
  const Array x = device_put(array({1.5f, -2.0f}), cpu1);
  // Only an integer leaves the function, and its cotangent is on cpu:0: x's gradient, all zeros,
  // is made where x is.
  auto [out, pullback] =
      detail::vjp_flat([](const Arrays& v) { return Arrays{convert_element_type(v[0], DType::i32)}; }, {x});
  const Arrays g = pullback({zeros({2}, DType::i32)});
  CHECK(g[0].device() == cpu1);
  CHECK(committed(g[0]));
  CHECK(g[0].dtype() == DType::f32);
  CHECK(g[0].to_vector<float>() == std::vector<float>{0.0f, 0.0f});

  // An unused input on cpu:1 beside a used one on the default device; an uncommitted unused input
  // stays uncommitted on the default device.
  const Array y = device_put(array({3.0f}), cpu1), z = array({4.0f});
  const auto [gx, gy, gz] = grad([](const Array& a, const Array&, const Array&) { return sum(a * a); },
                                 argnums<0, 1, 2>)(array({1.0f, 2.0f}), y, z);
  CHECK(gx.to_vector<float>() == std::vector<float>{2.0f, 4.0f});
  CHECK(gy.device() == cpu1);
  CHECK(committed(gy));
  CHECK(gz.device() == default_device());
  CHECK_FALSE(committed(gz));
}

TEST_CASE("grad: the zero cotangents of an empty convolution's filter and of an empty slice stay on the operands' device") {
  CpuDevices devices(2);
  const Device cpu1 = Device::cpu(1);
  const ConvDimensionNumbers nchw{"NCHW", "OIHW", "NCHW"};
  const Array lhs = device_put(zeros({0, 2, 5, 5}), cpu1), rhs = device_put(ones({3, 2, 3, 3}), cpu1);
  const auto [glhs, grhs] = grad(
      [&](const Array& l, const Array& r) { return sum(conv_general_dilated(l, r, {1, 1}, "SAME", {}, {}, nchw)); },
      argnums<0, 1>)(lhs, rhs);
  CHECK(glhs.shape() == lhs.shape());
  CHECK(grhs.shape() == rhs.shape());
  CHECK(grhs.device() == cpu1);
  CHECK(committed(grhs));
  CHECK(sum(abs(grhs)).item<float>() == 0.0f);

  const Array x = device_put(array({1.0f, 2.0f, 3.0f}), cpu1);
  const Array gs = grad([](const Array& a) { return sum(slice(a, {1}, {1})); })(x);
  CHECK(gs.device() == cpu1);
  CHECK(committed(gs));
  CHECK(gs.to_vector<float>() == std::vector<float>{0.0f, 0.0f, 0.0f});
}

TEST_CASE("jvp: a missing tangent is a zero like its primal, so a sum's tangent lands where the sum does") {
  CpuDevices devices(2);
  const Device cpu1 = Device::cpu(1);
  const Array x = array({1.0f, 2.0f}), y = device_put(array({3.0f, 4.0f}), cpu1);
  const auto [out, tangents] =
      detail::jvp_flat([](const Arrays& v) { return Arrays{v[0] + v[1]}; }, {x, y}, {ones({2}), Array()});
  CHECK(out[0].device() == cpu1);
  CHECK(tangents[0].device() == cpu1);
  CHECK(committed(tangents[0]));
  CHECK(tangents[0].to_vector<float>() == std::vector<float>{1.0f, 1.0f});
}
