// lax.scatter / scatter_add and x.at(idx).get/set/add against per-element references: duplicates,
// dropped and clipped out-of-bounds windows, negative indices, broadcasting; jax.nn.one_hot; errors.
#include <algorithm>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

#include "helpers/nd_ref.hpp"

using namespace canopy;
using nd_ref::MultiIndex;

namespace {

// The row-scatter reference: for each k in order, rows idx[k] of x (shape [n, ...]) combine with
// updates[k]; out-of-range rows are dropped (or clamped when clip).
std::vector<double> row_scatter_ref(const Array& x, const std::vector<std::int64_t>& idx, const Array& upd, bool add,
                                    bool clip) {
  auto out = x.to_vector<double>();
  auto uv = upd.to_vector<double>();
  const std::int64_t n = x.shape()[0], row = n ? x.size() / n : 0;
  for (std::size_t k = 0; k < idx.size(); ++k) {
    std::int64_t r = clip ? std::clamp<std::int64_t>(idx[k], 0, n - 1) : idx[k];
    if (r < 0 || r >= n) continue;
    for (std::int64_t j = 0; j < row; ++j) {
      double& o = out[static_cast<std::size_t>(r * row + j)];
      double u = uv[static_cast<std::size_t>(static_cast<std::int64_t>(k) * row + j)];
      o = add ? o + u : u;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("scatter and scatter_add: row updates with duplicates, drops and clips match the reference") {
  std::mt19937 g(41);
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::bf16}) {
    for (int trial = 0; trial < 12; ++trial) {
      Shape s = nd_ref::random_shape(g, 1, 3);
      if (s[0] == 0) s[0] = 3;
      const std::int64_t n = s[0], k = std::uniform_int_distribution<std::int64_t>(0, 6)(g);
      std::vector<int> iv;
      for (std::int64_t i = 0; i < k; ++i) iv.push_back(std::uniform_int_distribution<int>(-2, static_cast<int>(n) + 1)(g));
      Shape us = s;
      us[0] = k;
      Array x = trial % 2 ? nd_ref::transposed_values(s, d, trial) : nd_ref::values(s, d, trial);
      Array u = nd_ref::transposed_values(us, d, 50 + trial);
      Array idx = array(iv, Shape{k, 1});
      std::vector<int> win;
      for (int i = 1; i < static_cast<int>(s.size()); ++i) win.push_back(i);
      ScatterDimensionNumbers dn{win, {0}, {0}};
      std::vector<std::int64_t> i64(iv.begin(), iv.end());
      CAPTURE(to_string(s));
      CAPTURE(k);
      CHECK(scatter_add(x, idx, u, dn).to_vector<double>() == row_scatter_ref(x, i64, u, true, false));
      CHECK(scatter_add(x, idx, u, dn, GatherScatterMode::clip).to_vector<double>() ==
            row_scatter_ref(x, i64, u, true, true));
      CHECK(scatter(x, idx, u, dn).to_vector<double>() == row_scatter_ref(x, i64, u, false, false));
      CHECK(scatter(x, idx, u, dn, GatherScatterMode::clip).to_vector<double>() ==
            row_scatter_ref(x, i64, u, false, true));
    }
  }
}

TEST_CASE("scatter_add: a window partly outside the operand is dropped whole, or clipped into it") {
  Array x = zeros({4, 4}, DType::i32);
  Array idx = array({{1, 3}, {2, 1}});      // the first window (2 wide from column 3) leaves the operand
  Array u = array({{1, 2}, {3, 4}});
  ScatterDimensionNumbers dn{{1}, {0}, {0, 1}};
  CHECK(scatter_add(x, idx, u, dn).to_vector<int>() ==
        std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0});
  CHECK(scatter_add(x, idx, u, dn, GatherScatterMode::clip).to_vector<int>() ==
        std::vector<int>{0, 0, 0, 0, 0, 0, 1, 2, 0, 3, 4, 0, 0, 0, 0, 0});
}

TEST_CASE("scatter: errors name the primitive and the shapes") {
  Array x = zeros({4, 3});
  Array idx = array({0, 1}).reshape({2, 1});
  ScatterDimensionNumbers rows{{1}, {0}, {0}};
  CHECK(scatter(x, idx, zeros({2, 3}), rows).shape() == Shape{4, 3});
  CHECK_THROWS_WITH_AS(scatter(x, idx, zeros({2, 4}), rows), doctest::Contains("scatter: updates"), ShapeError);
  CHECK_THROWS_WITH_AS(scatter(x, idx, zeros({3, 3}), rows), doctest::Contains("f32[3,3]"), ShapeError);
  CHECK_THROWS_AS(scatter(x, idx, zeros({2, 3}, DType::f64), rows), TypeError);
  CHECK_THROWS_AS(scatter(x, idx.astype(DType::f32), zeros({2, 3}), rows), TypeError);
  CHECK_THROWS_AS(scatter(x, idx, zeros({2}), rows), ShapeError);
  CHECK_THROWS_AS(scatter(x, idx, zeros({2, 3}), {{1}, {0}, {0, 1}}), ShapeError);
  CHECK_THROWS_AS(scatter(x, idx, zeros({2, 3}), {{1}, {2}, {0}}), ShapeError);
  CHECK_THROWS_AS(scatter(x, idx, zeros({2, 3}), {{0}, {0}, {0}}), ShapeError);
  CHECK_THROWS_WITH_AS(scatter_add(zeros({2}, DType::bool_), idx, zeros({2}, DType::bool_), {{}, {0}, {0}}),
                       doctest::Contains("scatter-add"), TypeError);
}

TEST_CASE("at: get/set/add on the leading axis match numpy indexing, with negative indices") {
  std::mt19937 g(7);
  for (int trial = 0; trial < 30; ++trial) {
    Shape s = nd_ref::random_shape(g, 1, 3);
    if (s[0] == 0) s[0] = 2;
    const std::int64_t n = s[0];
    Shape is = nd_ref::random_shape(g, 0, 2);
    std::vector<int> iv(static_cast<std::size_t>(shape_size(is)));
    for (auto& v : iv) v = std::uniform_int_distribution<int>(static_cast<int>(-n), static_cast<int>(n) - 1)(g);
    Array x = trial % 2 ? nd_ref::transposed_values(s, DType::f32, trial) : nd_ref::values(s, DType::f32, trial);
    Array idx = array(iv, is);
    std::vector<std::int64_t> norm;
    for (int v : iv) norm.push_back(v < 0 ? v + n : v);
    Shape us = is;
    for (std::size_t d = 1; d < s.size(); ++d) us.push_back(s[d]);
    Array u = nd_ref::values(us, DType::f32, 70 + trial);
    CAPTURE(to_string(s));
    CAPTURE(to_string(is));
    // get: rows norm[k] stacked in index order.
    auto xv = x.to_vector<double>();
    const std::int64_t row = x.size() / n;
    std::vector<double> want;
    for (auto r : norm)
      for (std::int64_t j = 0; j < row; ++j) want.push_back(xv[static_cast<std::size_t>(r * row + j)]);
    Array got = x.at(idx).get();
    REQUIRE(got.shape() == us);
    CHECK(got.to_vector<double>() == want);
    Array flat_u = u.reshape({static_cast<std::int64_t>(norm.size()), row});
    CHECK(x.at(idx).add(u).to_vector<double>() == row_scatter_ref(x, norm, flat_u, true, false));
    CHECK(x.at(idx).set(u).to_vector<double>() == row_scatter_ref(x, norm, flat_u, false, false));
  }
}

TEST_CASE("at: several index arrays broadcast together, scalars broadcast as values, out-of-range rules") {
  Array x = zeros({3, 4});
  Array r = array({0, 2, -1}), c = array({{1}, {3}});  // broadcast to [2,3]
  Array y = x.at({r, c}).add(1.0f);
  std::vector<float> want(12, 0.f);
  for (int i : {0, 2, 2})
    for (int j : {1, 3}) want[static_cast<std::size_t>(i * 4 + j)] += 1.f;  // (2,1) and (2,3) twice
  CHECK(y.to_vector<float>() == want);
  CHECK(y.at({r, c}).get().shape() == Shape{2, 3});
  Array v = array({10, 20, 30});
  CHECK(v.at(1).set(5).to_vector<int>() == std::vector<int>{10, 5, 30});
  CHECK(v.at(7).set(5).to_vector<int>() == std::vector<int>{10, 20, 30});        // dropped
  CHECK(v.at(7).set(5, GatherScatterMode::clip).to_vector<int>() == std::vector<int>{10, 20, 5});
  CHECK(v.at(7).get().item<int>() == 30);                                        // get clamps by default
  CHECK(v.at(7).get(GatherScatterMode::fill_or_drop, -1).item<int>() == -1);
  CHECK(v.at(array({0, 0})).add(array({1, 2})).to_vector<int>() == std::vector<int>{13, 20, 30});
  CHECK(v.at(0).add(2.7).to_vector<int>() == std::vector<int>{12, 20, 30});      // values cast to x's dtype
  CHECK(v.to_vector<int>() == std::vector<int>{10, 20, 30});
}

TEST_CASE("at: errors name the method and the shapes") {
  Array x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(x.at({array({0}), array({0}), array({0})}).get(), doctest::Contains("at.get"), ShapeError);
  CHECK_THROWS_AS(x.at(std::vector<Array>{}).get(), ShapeError);
  CHECK_THROWS_WITH_AS(x.at(array({0.5f})).set(1), doctest::Contains("at.set"), TypeError);
  CHECK_THROWS_AS(x.at({array({0, 1}), array({0, 1, 2})}).add(1), ShapeError);
  CHECK_THROWS_WITH_AS(x.at(array({0, 1})).set(zeros({2, 4})), doctest::Contains("[2,4]"), ShapeError);
  CHECK_THROWS_WITH_AS(zeros({0, 3}).at(array({0})).get(), doctest::Contains("empty axis"), ShapeError);
  CHECK(zeros({0, 3}).at(zeros({0}, DType::i32)).get().shape() == Shape{0, 3});
  // Nothing fits in an empty axis, so even a clipped update is dropped.
  CHECK(zeros({0, 3}).at(0).set(1, GatherScatterMode::clip).shape() == Shape{0, 3});
}

TEST_CASE("one_hot: rows of the identity, all-zero rows out of range, any axis and dtype") {
  Array i = array({0, 2, -1, 3});
  CHECK(one_hot(i, 3).to_vector<float>() == std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0});
  CHECK(one_hot(i, 3).shape() == Shape{4, 3});
  CHECK(one_hot(i, 3, DType::i32, 0).to_vector<int>() == std::vector<int>{1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0});
  std::mt19937 g(3);
  for (int trial = 0; trial < 10; ++trial) {
    Shape s = nd_ref::random_shape(g, 0, 3);
    std::vector<int> iv(static_cast<std::size_t>(shape_size(s)));
    for (auto& v : iv) v = std::uniform_int_distribution<int>(-1, 5)(g);
    const int axis = std::uniform_int_distribution<int>(0, static_cast<int>(s.size()))(g);
    Array y = one_hot(array(iv, s), 5, DType::f64, axis);
    REQUIRE(y.ndim() == s.size() + 1);
    CHECK(y.shape()[static_cast<std::size_t>(axis)] == 5);
    auto yv = y.to_vector<double>();
    bool ok = true;
    for (std::int64_t f = 0; f < y.size(); ++f) {
      nd_ref::MultiIndex o = nd_ref::unravel(f, y.shape());
      std::int64_t cls = o[static_cast<std::size_t>(axis)];
      o.erase(o.begin() + axis);
      ok = ok && yv[static_cast<std::size_t>(f)] == (iv[static_cast<std::size_t>(nd_ref::ravel(o, s))] == cls ? 1 : 0);
    }
    CHECK(ok);
  }
  CHECK_THROWS_WITH_AS(one_hot(i, 3, DType::f32, 2), doctest::Contains("one_hot"), ShapeError);
}

TEST_CASE("x.at({i, j}) takes plain integers, as x.at[i, j]") {
  const Array x = reshape(arange(6).astype(DType::f32), {2, 3});
  CHECK(x.at({1, 2}).get().item<float>() == 5.0f);
  CHECK(x.at({0, 1}).set(scalar(9.0f)).to_vector<float>() == std::vector<float>{0, 9, 2, 3, 4, 5});
  CHECK(x.at({-1, 0}).add(scalar(1.0f)).to_vector<float>() == std::vector<float>{0, 1, 2, 4, 4, 5});
}
