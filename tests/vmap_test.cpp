// vmap on the caller's pytrees: in_axes/out_axes forms, nesting, composition with grad, and
// the errors for inconsistent or malformed axes.
#include <doctest/doctest.h>

#include <canopy/transforms.hpp>

using namespace canopy;

namespace {

std::vector<double> values(const Array& x) { return x.astype(DType::f64).to_vector<double>(); }

void check_same(const Array& got, const Array& want) {
  CHECK(to_string(got.aval()) == to_string(want.aval()));
  auto g = values(got), w = values(want);
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(w[i]).epsilon(1e-6));
}

Array row(const Array& x, std::int64_t i) { return take(x, scalar(static_cast<int>(i)), 0); }

struct Params {
  Array w, b;
};

Array predict(const Params& p, const Array& x) { return tanh(matmul(x, p.w) + p.b); }

}  // namespace

TEST_CASE("vmap over the leading axis equals a loop over the rows") {
  Array x = array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  auto f = [](const Array& v) { return sum(sin(v) * v) + max(v); };
  Array got = vmap(f)(x);
  check_same(got, stack({f(row(x, 0)), f(row(x, 1))}));
}

TEST_CASE("in_axes picks the mapped axis per argument; none shares an argument") {
  Array a = array({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}});  // mapped over axis 1 (size 2)
  Array w = array({0.5, -1.0, 2.0});                       // shared
  auto f = [](const Array& col, const Array& ww) { return sum(col * ww); };
  Array got = vmap(f, in_axes(1, none))(a, w);
  check_same(got, array({0.5 - 3.0 + 10.0, 1.0 - 4.0 + 12.0}));
  check_same(vmap(f, in_axes(-1, none))(a, w), got);
}

TEST_CASE("out_axes places the batch axis in the result") {
  Array x = array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  auto twice = [](const Array& v) { return stack({v, v * 2.0}); };  // f32[2,3] per example
  Array got = vmap(twice, out_axes(1))(x);                             // [2, batch=2, 3]
  CHECK(got.shape() == Shape{2, 2, 3});
  check_same(row(got, 1), x * 2.0);
}

TEST_CASE("nested vmap computes an outer product; vmap of vmap of matmul is a batched matmul") {
  Array a = array({1.0, 2.0, 3.0}), b = array({10.0, 20.0});
  auto outer = vmap([&](const Array& x) { return vmap([&](const Array& y) { return x * y; })(b); });
  check_same(outer(a), array({{10.0, 20.0}, {20.0, 40.0}, {30.0, 60.0}}));
  Array m = reshape(arange(0.0, 24.0, 1.0, DType::f64), {2, 3, 2, 2});
  Array got = vmap(vmap([](const Array& p, const Array& q) { return matmul(p, q); }))(m, m);
  check_same(got, matmul(m, m));
}

TEST_CASE("vmap of a function on structs maps every Array leaf and keeps the struct type") {
  Params p{array({{1.0, 0.0}, {0.0, 1.0}, {1.0, 1.0}}), array({0.1, -0.1})};
  Array xs = array({{1.0, 2.0, 3.0}, {0.0, -1.0, 0.5}});
  Array got = vmap(predict, in_axes(none, 0))(p, xs);
  check_same(got, predict(p, xs));
  // A batch of parameter sets, each applied to the same input.
  Params many{stack({p.w, p.w * 2.0}), stack({p.b, p.b})};
  Array per = vmap(predict, in_axes(0, none))(many, row(xs, 0));
  check_same(row(per, 1), predict(Params{p.w * 2.0, p.b}, row(xs, 0)));
  // A tree prefix: w mapped, b shared.
  auto predict_pair = [](const std::pair<Array, Array>& wb, const Array& x) { return predict(Params{wb.first, wb.second}, x); };
  Array pre = vmap(predict_pair, in_axes(std::pair{0, none}, none))(std::pair{stack({p.w, p.w * 2.0}), p.b}, row(xs, 0));
  check_same(row(pre, 1), predict(Params{p.w * 2.0, p.b}, row(xs, 0)));
}

TEST_CASE("a callable in_axes maps exactly the leaves whose leading dimension is the batch") {
  const std::int64_t batch = 4;
  Params p{array({{1.0, 0.0}, {0.0, 1.0}, {1.0, 1.0}}), array({0.1, -0.1})};
  Array xs = reshape(arange(0.0, 12.0, 1.0, DType::f64), {4, 3});
  auto lead = [&](const KeyPath&, const Array& x) -> Axis { return x.ndim() > 0 && x.shape(0) == batch ? Axis(0) : none; };
  Array got = vmap(predict, in_axes(lead, lead))(p, xs);
  check_same(got, predict(p, xs));
}

TEST_CASE("per-example gradients: vmap(grad(loss)) equals a loop of grad") {
  Params p{array({{0.5, -0.2}, {0.1, 0.3}, {-0.4, 0.2}}), array({0.05, -0.05})};
  Array xs = array({{1.0, 2.0, 3.0}, {0.0, -1.0, 0.5}, {2.0, 0.5, -1.0}});
  Array ys = array({{1.0, 0.0}, {0.0, 1.0}, {1.0, 1.0}});
  auto loss = [](const Params& q, const Array& x, const Array& y) { return sum(square(predict(q, x) - y)); };
  Params per = vmap(grad(loss), in_axes(none, 0, 0))(p, xs, ys);
  CHECK(per.w.shape() == Shape{3, 3, 2});
  for (std::int64_t i = 0; i < 3; ++i) {
    Params one = grad(loss)(p, row(xs, i), row(ys, i));
    check_same(row(per.w, i), one.w);
    check_same(row(per.b, i), one.b);
  }
}

TEST_CASE("grad of vmap and vmap of jvp compose") {
  Array x = array({0.5, 1.0, 1.5});
  auto g = grad([](const Array& v) { return sum(vmap([](const Array& e) { return e * e * e; })(v)); });
  check_same(g(x), x * x * 3.0);
  auto dirderiv = vmap([](const Array& e) { return jvp([](const Array& z) { return sin(z); }, std::make_tuple(e), std::make_tuple(ones_like(e))).second; });
  check_same(dirderiv(x), cos(x));
}

TEST_CASE("an unmapped output is broadcast along the batch; out_axes none keeps it single") {
  Array x = array({1.0, 2.0});
  auto f = [](const Array& v, const Array& c) { return std::make_pair(v * 2.0, c + 1.0); };
  auto [a, b] = vmap(f, in_axes(0, none))(x, scalar(5.0));
  check_same(b, array({6.0, 6.0}));
  auto [a2, b2] = vmap(f, in_axes(0, none), out_axes(std::pair{0, none}))(x, scalar(5.0));
  check_same(b2, scalar(6.0));
  check_same(a2, a);
}

TEST_CASE("vmap errors name the leaves, the sizes and the axes") {
  auto f = [](const Array& u, const Array& v) { return u + v; };
  CHECK_THROWS_WITH_AS(vmap(f)(zeros({3, 2}), zeros({4, 2})), doctest::Contains("args[1] f32[4,2] has 4"), ShapeError);
  CHECK_THROWS_WITH_AS(vmap(f)(zeros({3, 2}), zeros({4, 2})), doctest::Contains("args[0] f32[3,2] has 3"), ShapeError);
  CHECK_THROWS_WITH_AS(vmap(f, in_axes(2, 0))(zeros({3, 2}), zeros({3, 2})), doctest::Contains("in_axes"), ShapeError);
  CHECK_THROWS_WITH_AS(vmap(f, in_axes(none, none))(zeros({3}), zeros({3})), doctest::Contains("axis_size"), ShapeError);
  CHECK(vmap(f, in_axes(none, none), axis_size(2))(zeros({3}), zeros({3})).shape() == Shape{2, 3});
  auto g = [](const std::vector<Array>& xs) { return xs[0]; };
  CHECK_THROWS_AS(vmap(g, in_axes(std::vector<int>{0, 0, 0}))(std::vector<Array>{zeros({2}), zeros({2})}), TreeError);
  auto h = [](const Array& u, const Array& c) { return u * c; };
  CHECK_THROWS_WITH_AS(vmap(h, in_axes(0, none), out_axes(none))(zeros({2}), scalar(1.f)), doctest::Contains("out_axes"), ShapeError);
}

TEST_CASE("vmap of dynamic_slice and dynamic_update_slice over starts, operands or both equals a loop") {
  // Starts include a negative one (counts from the end) and ones past the edge (clamped), in
  // both index dtypes; the batched rules lower to one gather / scatter in clip mode.
  const Array x = reshape(arange(30).astype(DType::f32), {5, 6});
  const Array xs = stack({x, x * 2.0f, x - 7.0f, -x});
  const Array rows = array({0, 4, -2, 3}), cols = array({5u, 0u, 2u, 4000000000u});
  const Array upd = reshape(arange(4).astype(DType::f32) + 100.0f, {2, 2});
  auto slice_at = [](const Array& m, const Array& r, const Array& c) { return dynamic_slice(m, {r, c}, {2, 3}); };
  auto update_at = [&](const Array& m, const Array& r, const Array& c) { return dynamic_update_slice(m, upd, {r, c}); };
  const Array s_starts = vmap(slice_at, in_axes(none, 0, 0))(x, rows, cols);
  const Array s_both = vmap(slice_at)(xs, rows, cols);
  const Array s_operand = vmap(slice_at, in_axes(0, none, none))(xs, scalar(-1), scalar(2u));
  const Array u_starts = vmap(update_at, in_axes(none, 0, 0))(x, rows, cols);
  const Array u_both = vmap(update_at)(xs, rows, cols);
  for (int i = 0; i < 4; ++i) {
    const Array r = row(rows, i), c = row(cols, i), xi = row(xs, i);
    check_same(row(s_starts, i), slice_at(x, r, c));
    check_same(row(s_both, i), slice_at(xi, r, c));
    check_same(row(s_operand, i), slice_at(xi, scalar(-1), scalar(2u)));
    check_same(row(u_starts, i), update_at(x, r, c));
    check_same(row(u_both, i), update_at(xi, r, c));
  }
}

TEST_CASE("an in_axes tree that is not a prefix of its argument names the argument") {
  auto f = [](const Array& a, const std::vector<Array>& v) { return a + v[0]; };
  const std::vector<Array> three{zeros({2}), zeros({2}), zeros({2})};
  CHECK_THROWS_WITH_AS(vmap(f, in_axes(0, std::vector<int>{0, 0}))(zeros({2}), three),
                       doctest::Contains("vmap in_axes: axes (args[1])"), TreeError);
}
