// lax.gather and jnp.take / take_along_axis against per-element references: JAX's out-of-bounds
// modes (fill with NaN / lowest int / highest uint / true, clip), negative indices, size-0/1 dims,
// transposed inputs, and every error.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

#include "helpers/nd_ref.hpp"

using namespace canopy;
using nd_ref::MultiIndex;

namespace {

Array ints(const std::vector<int>& v, const Shape& s) { return array(v, s); }

// Random indices in [-n - 2, n + 2) so every mode sees negatives and out-of-range values.
Array random_indices(const Shape& s, std::int64_t n, std::mt19937& g) {
  std::uniform_int_distribution<int> u(static_cast<int>(-n - 2), static_cast<int>(n + 1));
  std::vector<int> v(static_cast<std::size_t>(shape_size(s)));
  for (auto& x : v) x = u(g);
  return array(v, s);
}

// NaN-aware equality of two double vectors.
bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

// jnp.take reference: out[pre, j, post] = x[pre, idx[j], post] per JAX's mode rules.
std::vector<double> take_ref(const Array& x, const Array& idx, int axis, GatherScatterMode mode, double fill) {
  auto xv = x.to_vector<double>();
  auto iv = nd_ref::ints_of(idx);
  const auto ax = static_cast<std::size_t>(axis);
  const std::int64_t n = x.shape()[ax];
  Shape out(std::vector<std::int64_t>(x.shape().begin(), x.shape().begin() + axis));
  for (auto d : idx.shape()) out.push_back(d);
  for (std::size_t d = ax + 1; d < x.ndim(); ++d) out.push_back(x.shape()[d]);
  std::vector<double> r;
  for (std::int64_t i = 0; i < shape_size(out); ++i) {
    nd_ref::MultiIndex o = nd_ref::unravel(i, out);
    nd_ref::MultiIndex jix(o.begin() + axis, o.begin() + axis + static_cast<std::ptrdiff_t>(idx.ndim()));
    std::int64_t k = iv[static_cast<std::size_t>(nd_ref::ravel(jix, idx.shape()))];
    if (mode == GatherScatterMode::fill_or_drop && k < 0) k += n;
    if (mode == GatherScatterMode::clip) k = std::clamp<std::int64_t>(k, 0, n - 1);
    if (k < 0 || k >= n) { r.push_back(fill); continue; }
    nd_ref::MultiIndex xi(o.begin(), o.begin() + axis);
    xi.push_back(k);
    xi.insert(xi.end(), o.begin() + axis + static_cast<std::ptrdiff_t>(idx.ndim()), o.end());
    r.push_back(xv[static_cast<std::size_t>(nd_ref::ravel(xi, x.shape()))]);
  }
  return r;
}

}  // namespace

TEST_CASE("take: matches the reference for every axis, fill and clip, random shapes and dtypes") {
  std::mt19937 g(21);
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::u32, DType::bool_, DType::bf16}) {
    for (int trial = 0; trial < 10; ++trial) {
      Shape s = nd_ref::random_shape(g, 1, 3);
      int axis = std::uniform_int_distribution<int>(0, static_cast<int>(s.size()) - 1)(g);
      if (s[static_cast<std::size_t>(axis)] == 0) s[static_cast<std::size_t>(axis)] = 2;
      Array x = trial % 2 ? nd_ref::transposed_values(s, d, trial) : nd_ref::values(s, d, trial);
      Array idx = random_indices(nd_ref::random_shape(g, 0, 2), s[static_cast<std::size_t>(axis)], g);
      CAPTURE(to_string(s));
      CAPTURE(to_string(idx.shape()));
      // JAX's fill defaults, seen through a double.
      double fill = d == DType::i32 ? -2147483648.0 : d == DType::u32 ? 4294967295.0 : d == DType::bool_ ? 1 : NAN;
      CHECK(same(take(x, idx, axis).to_vector<double>(), take_ref(x, idx, axis, GatherScatterMode::fill_or_drop, fill)));
      CHECK(same(take(x, idx, axis - static_cast<int>(s.size()), GatherScatterMode::clip).to_vector<double>(),
                 take_ref(x, idx, axis, GatherScatterMode::clip, 0)));
      CHECK(same(take(x, idx, axis, GatherScatterMode::fill_or_drop, 3.0).to_vector<double>(),
                 take_ref(x, idx, axis, GatherScatterMode::fill_or_drop, d == DType::bool_ ? 1 : 3)));
    }
  }
}

TEST_CASE("take: JAX's documented examples, flattening without axis, empty indices") {
  Array x = array({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  CHECK(take(x, array({2, 0})).to_vector<float>() == std::vector<float>{3, 1});
  CHECK(take(x, array({2, 0}), 1).to_vector<float>() == std::vector<float>{3, 1, 6, 4});
  auto filled = take(x, array({2, 0}), 0).to_vector<float>();
  CHECK(std::isnan(filled[0]));
  CHECK(std::vector<float>(filled.begin() + 3, filled.end()) == std::vector<float>{1, 2, 3});
  CHECK(take(x, array({2, 0}), 0, GatherScatterMode::clip).to_vector<float>() == std::vector<float>{4, 5, 6, 1, 2, 3});
  CHECK(take(x, array({-1}), 0).to_vector<float>() == std::vector<float>{4, 5, 6});                           // wraps
  CHECK(take(x, array({-1}), 0, GatherScatterMode::clip).to_vector<float>() == std::vector<float>{1, 2, 3});  // clamps
  CHECK(take(x, zeros({0, 2}, DType::i32), 1).shape() == Shape{2, 0, 2});
  CHECK(take(zeros({3, 0}), array({1}), 0).shape() == Shape{1, 0});
  CHECK(take(array({5, 6}), scalar(1)).shape() == Shape{});
}

TEST_CASE("take: errors name take and the shapes") {
  CHECK_THROWS_WITH_AS(take(zeros({2, 3}), array({0.5f})), doctest::Contains("take"), TypeError);
  CHECK_THROWS_WITH_AS(take(zeros({2, 3}), array({0}), 2), doctest::Contains("f32[2,3]"), ShapeError);
  CHECK_THROWS_WITH_AS(take(zeros({0, 3}), array({0}), 0), doctest::Contains("empty axis"), ShapeError);
}

TEST_CASE("take_along_axis: matches the reference, broadcasting unit dims of either side") {
  std::mt19937 g(33);
  for (int trial = 0; trial < 60; ++trial) {
    Shape s = nd_ref::random_shape(g, 1, 3);
    const int r = static_cast<int>(s.size());
    int axis = std::uniform_int_distribution<int>(0, r - 1)(g);
    Shape is = s;
    for (int i = 0; i < r; ++i) {
      int pick = std::uniform_int_distribution<int>(0, 3)(g);
      if (i == axis) is[static_cast<std::size_t>(i)] = std::uniform_int_distribution<std::int64_t>(0, 3)(g);
      else if (pick == 0) is[static_cast<std::size_t>(i)] = 1;                         // idx broadcasts
      else if (pick == 1 && s[static_cast<std::size_t>(i)] == 1) is[static_cast<std::size_t>(i)] = 3;  // x broadcasts
    }
    Array x = trial % 2 ? nd_ref::transposed_values(s, DType::f32, trial) : nd_ref::values(s, DType::f32, trial);
    const std::int64_t n = s[static_cast<std::size_t>(axis)];
    Array idx = random_indices(is, n, g);
    Shape unit = s;
    unit[static_cast<std::size_t>(axis)] = 1;
    Shape out = broadcast_shapes(is, unit);
    auto xv = x.to_vector<double>();
    auto iv = nd_ref::ints_of(idx);
    std::vector<double> want_fill, want_clip;
    for (std::int64_t i = 0; i < shape_size(out); ++i) {
      nd_ref::MultiIndex o = nd_ref::unravel(i, out), ii = o, xi = o;
      for (int d = 0; d < r; ++d) {
        if (is[static_cast<std::size_t>(d)] == 1) ii[static_cast<std::size_t>(d)] = 0;
        if (s[static_cast<std::size_t>(d)] == 1) xi[static_cast<std::size_t>(d)] = 0;
      }
      std::int64_t k = iv[static_cast<std::size_t>(nd_ref::ravel(ii, is))];
      if (k < 0) k += n;
      xi[static_cast<std::size_t>(axis)] = std::clamp<std::int64_t>(k, 0, n - 1);
      double v = n == 0 ? 0 : xv[static_cast<std::size_t>(nd_ref::ravel(xi, s))];
      want_clip.push_back(v);
      want_fill.push_back(k >= 0 && k < n ? v : NAN);
    }
    CAPTURE(to_string(s));
    CAPTURE(to_string(is));
    Array got = take_along_axis(x, idx, axis);
    REQUIRE(got.shape() == out);
    if (n > 0) {
      CHECK(same(got.to_vector<double>(), want_fill));
      CHECK(same(take_along_axis(x, idx, axis - r, GatherScatterMode::clip).to_vector<double>(), want_clip));
    } else {
      CHECK(got.to_vector<double>() == std::vector<double>(static_cast<std::size_t>(shape_size(out)), 0.0));
    }
  }
}

TEST_CASE("take_along_axis: JAX's examples, axis None, and its errors") {
  Array x = array({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  CHECK(take_along_axis(x, array({{0, 2}, {1, 0}}), 1).to_vector<float>() == std::vector<float>{1, 3, 5, 4});
  auto v = take_along_axis(x, array({{1, 0, 2}}), 0).to_vector<float>();
  CHECK(v[0] == 4.f);
  CHECK(v[1] == 2.f);
  CHECK(std::isnan(v[2]));
  CHECK(take_along_axis(x, array({5, -1}), std::nullopt).to_vector<float>() == std::vector<float>{6, 6});
  CHECK_THROWS_WITH_AS(take_along_axis(x, array({0}), 1), doctest::Contains("take_along_axis"), ShapeError);
  CHECK_THROWS_AS(take_along_axis(x, array({{0}}), std::nullopt), ShapeError);
  CHECK_THROWS_AS(take_along_axis(x, array({{0.f}}), 1), TypeError);
  CHECK_THROWS_WITH_AS(take_along_axis(x, zeros({3, 1}, DType::i32), 1), doctest::Contains("[3,1]"), ShapeError);
  CHECK_THROWS_AS(take_along_axis(x, zeros({2, 1}, DType::i32), 2), ShapeError);
}

TEST_CASE("gather: general dimension numbers match a per-element reference (2-d index vectors, windows)") {
  // operand [4,5,3]; index vectors pick (dim0, dim1); windows [1,2,3] with dim 0 collapsed.
  Array x = nd_ref::transposed_values({4, 5, 3}, DType::f64, 3);
  Array idx = ints({0, 0, 3, 3, 1, 4, -1, 2, 2, 1, 3, 0}, {2, 3, 2});
  GatherDimensionNumbers dn{{1, 3}, {0}, {0, 1}};
  const Shape sizes{1, 2, 3};
  auto xv = x.to_vector<double>();
  auto iv = nd_ref::ints_of(idx);
  for (auto mode : {GatherScatterMode::fill_or_drop, GatherScatterMode::clip, GatherScatterMode::promise_in_bounds}) {
    Array y = gather(x, idx, dn, sizes, mode, -7.0);
    REQUIRE(y.shape() == Shape{2, 2, 3, 3});
    std::vector<double> want;
    for (std::int64_t i = 0; i < y.size(); ++i) {
      nd_ref::MultiIndex o = nd_ref::unravel(i, y.shape());  // (b0, w1, b1, w2)
      std::int64_t b = o[0] * 3 + o[2];
      nd_ref::MultiIndex start{iv[static_cast<std::size_t>(2 * b)], iv[static_cast<std::size_t>(2 * b + 1)], 0};
      bool oob = start[0] < 0 || start[0] > 3 || start[1] < 0 || start[1] > 3;
      start[0] = std::clamp<std::int64_t>(start[0], 0, 3);
      start[1] = std::clamp<std::int64_t>(start[1], 0, 3);
      if (oob && mode == GatherScatterMode::fill_or_drop) { want.push_back(-7); continue; }
      want.push_back(xv[static_cast<std::size_t>(nd_ref::ravel({start[0], start[1] + o[1], o[3]}, x.shape()))]);
    }
    CHECK(y.to_vector<double>() == want);
  }
}

TEST_CASE("gather: malformed dimension numbers and slice sizes are errors naming gather") {
  Array x = zeros({4, 5});
  Array idx = ints({1, 2}, {2, 1});
  GatherDimensionNumbers rows{{1}, {0}, {0}};
  CHECK(gather(x, idx, rows, {1, 5}).shape() == Shape{2, 5});
  CHECK_THROWS_WITH_AS(gather(x, idx, rows, {1, 6}), doctest::Contains("gather: slice_sizes"), ShapeError);
  CHECK_THROWS_AS(gather(x, idx, rows, {2, 5}), ShapeError);   // collapsed dim must have size 1
  CHECK_THROWS_AS(gather(x, idx, rows, {1}), ShapeError);
  CHECK_THROWS_AS(gather(x, idx, {{1}, {0}, {0, 1}}, {1, 5}), ShapeError);  // index vector length
  CHECK_THROWS_AS(gather(x, idx, {{2}, {0}, {0}}, {1, 5}), ShapeError);     // offset dim out of range
  CHECK_THROWS_AS(gather(x, idx, {{1}, {0, 0}, {0}}, {1, 5}), ShapeError);
  CHECK_THROWS_AS(gather(x, idx, {{1}, {0}, {2}}, {1, 5}), ShapeError);
  CHECK_THROWS_AS(gather(x, scalar(1), rows, {1, 5}), ShapeError);
  CHECK_THROWS_WITH_AS(gather(x, array({{0.f}}), rows, {1, 5}), doctest::Contains("integer"), TypeError);
}

TEST_CASE("gather: fill defaults are NaN, lowest signed, highest unsigned and true") {
  Array idx = ints({5}, {1, 1});
  GatherDimensionNumbers one{{}, {0}, {0}};
  CHECK(std::isnan(gather(array({1.0, 2.0}), idx, one, {1}).item<double>()));
  CHECK(gather(array({1, 2}), idx, one, {1}).item<std::int32_t>() == std::numeric_limits<std::int32_t>::min());
  CHECK(gather(array({1u, 2u}), idx, one, {1}).item<std::uint32_t>() == std::numeric_limits<std::uint32_t>::max());
  CHECK(gather(array(std::vector<bool>{false, false}, {2}), idx, one, {1}).item<bool>());
}
