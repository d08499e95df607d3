// concatenate / stack / split and lax.pad / jnp.pad against plain-loop references on random shapes
// (size-0/1 dims, negative axes, transposed inputs, negative and interior padding), and errors.
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

#include "helpers/nd_ref.hpp"

using namespace canopy;
using nd_ref::MultiIndex;

TEST_CASE("concatenate: matches the reference along every axis, with empty pieces and promotion") {
  std::mt19937 g(17);
  for (int trial = 0; trial < 40; ++trial) {
    Shape s = nd_ref::random_shape(g, 1, 3);
    const int r = static_cast<int>(s.size());
    const int axis = std::uniform_int_distribution<int>(0, r - 1)(g);
    const auto ax = static_cast<std::size_t>(axis);
    std::vector<Array> xs;
    std::vector<std::vector<double>> vals;
    std::vector<std::int64_t> widths;
    const int k = std::uniform_int_distribution<int>(1, 4)(g);
    for (int i = 0; i < k; ++i) {
      Shape si = s;
      si[ax] = std::uniform_int_distribution<std::int64_t>(0, 3)(g);
      DType d = i == 1 ? DType::i32 : DType::f32;
      xs.push_back(i % 2 ? nd_ref::transposed_values(si, d, 10 * trial + i) : nd_ref::values(si, d, 10 * trial + i));
      vals.push_back(xs.back().to_vector<double>());
      widths.push_back(si[ax]);
    }
    Shape out = s;
    out[ax] = 0;
    for (auto w : widths) out[ax] += w;
    std::vector<double> want;
    for (std::int64_t f = 0; f < shape_size(out); ++f) {
      nd_ref::MultiIndex o = nd_ref::unravel(f, out);
      std::size_t piece = 0;
      while (o[ax] >= widths[piece]) o[ax] -= widths[piece++];
      Shape si = out;
      si[ax] = widths[piece];
      want.push_back(vals[piece][static_cast<std::size_t>(nd_ref::ravel(o, si))]);
    }
    CAPTURE(to_string(s));
    Array y = concatenate(xs, axis - (trial % 2) * r);
    REQUIRE(y.shape() == out);
    CHECK(y.dtype() == DType::f32);
    CHECK(y.to_vector<double>() == want);
  }
}

TEST_CASE("concatenate: a single array is returned; errors name concatenate and the shapes") {
  Array x = array({1, 2});
  CHECK(concatenate({x}).data<int>() == x.data<int>());
  CHECK(concatenate({x, array({3})}).to_vector<int>() == std::vector<int>{1, 2, 3});
  CHECK(concatenate({x, array(std::vector<bool>{true}, {1})}).dtype() == DType::i32);
  CHECK_THROWS_WITH_AS(concatenate({zeros({2, 3}), zeros({3, 3})}, 1), doctest::Contains("f32[3,3]"), ShapeError);
  CHECK_THROWS_WITH_AS(concatenate({zeros({2, 3}), zeros({3})}), doctest::Contains("concatenate"), ShapeError);
  CHECK_THROWS_AS(concatenate({}), ShapeError);
  CHECK_THROWS_AS(concatenate({scalar(1), scalar(2)}), ShapeError);
  CHECK_THROWS_AS(concatenate({x, x}, 1), ShapeError);
}

TEST_CASE("stack: a new axis at any position, negative axes, and shape errors") {
  Array a = array({{1, 2, 3}, {4, 5, 6}}), b = a + 10;
  CHECK(stack({a, b}).shape() == Shape{2, 2, 3});
  CHECK(stack({a, b}, 1).to_vector<int>() == std::vector<int>{1, 2, 3, 11, 12, 13, 4, 5, 6, 14, 15, 16});
  CHECK(stack({a, b}, -1).to_vector<int>() == std::vector<int>{1, 11, 2, 12, 3, 13, 4, 14, 5, 15, 6, 16});
  CHECK(stack({scalar(1.f), scalar(2.f)}).to_vector<float>() == std::vector<float>{1, 2});
  CHECK(stack({zeros({0, 2})}, 2).shape() == Shape{0, 2, 1});
  CHECK_THROWS_WITH_AS(stack({a, zeros({3, 2})}), doctest::Contains("stack"), ShapeError);
  CHECK_THROWS_AS(stack({a}, 3), ShapeError);
  CHECK_THROWS_AS(stack({}), ShapeError);
}

TEST_CASE("split: equal sections and split points, numpy slicing rules, round trip with concatenate") {
  Array x = nd_ref::transposed_values({6, 4}, DType::f32, 2);
  auto parts = split(x, 3);
  REQUIRE(parts.size() == 3);
  for (auto& p : parts) CHECK(p.shape() == Shape{2, 4});
  CHECK(concatenate(parts).to_vector<float>() == x.to_vector<float>());
  auto cols = split(x, {1, 3}, -1);
  REQUIRE(cols.size() == 3);
  CHECK(cols[0].shape() == Shape{6, 1});
  CHECK(cols[1].shape() == Shape{6, 2});
  CHECK(concatenate(cols, 1).to_vector<float>() == x.to_vector<float>());
  auto odd = split(array({0, 1, 2, 3, 4}), {3, 1, -1, 9});
  REQUIRE(odd.size() == 5);
  CHECK(odd[0].to_vector<int>() == std::vector<int>{0, 1, 2});
  CHECK(odd[1].size() == 0);                                   // x[3:1]: 1 is before 3
  CHECK(odd[2].to_vector<int>() == std::vector<int>{1, 2, 3}); // x[1:-1], -1 is 4 (numpy's)
  CHECK(odd[3].to_vector<int>() == std::vector<int>{4});       // x[4:9], 9 clamps to 5
  CHECK(odd[4].size() == 0);
  CHECK(split(zeros({0}), 4).size() == 4);
  CHECK(split(x, {3}).size() == 2);  // a braced list is split points, not a section count
  CHECK_THROWS_WITH_AS(split(x, 4), doctest::Contains("split"), ShapeError);
  CHECK_THROWS_AS(split(x, 0), ShapeError);
  CHECK_THROWS_AS(split(x, 2, 2), ShapeError);
}

TEST_CASE("pad: lax.pad with low/high/interior, negative low/high, matches the reference") {
  std::mt19937 g(23);
  for (DType d : {DType::f32, DType::i32, DType::bool_, DType::bf16}) {
    for (int trial = 0; trial < 15; ++trial) {
      Shape s = nd_ref::random_shape(g, 1, 3);
      std::vector<PadConfig> cfg;
      Shape out;
      for (auto n : s) {
        PadConfig c;
        c.interior = std::uniform_int_distribution<std::int64_t>(0, 2)(g);
        std::int64_t full = n + (n > 0 ? (n - 1) * c.interior : 0);
        c.low = std::uniform_int_distribution<std::int64_t>(-full / 2 - 1, 3)(g);
        c.high = std::uniform_int_distribution<std::int64_t>(-(full + c.low) / 2, 3)(g);
        if (c.low + c.high + full < 0) c.high = -c.low - full;
        cfg.push_back(c);
        out.push_back(c.low + c.high + full);
      }
      Array x = trial % 2 ? nd_ref::transposed_values(s, d, trial) : nd_ref::values(s, d, trial);
      auto xv = x.to_vector<double>();
      const double pv = d == DType::bool_ ? 1 : 7;
      // Each output position holds x[i] where pos = low + i * (interior + 1), else the pad value.
      std::vector<double> want;
      for (std::int64_t f = 0; f < shape_size(out); ++f) {
        nd_ref::MultiIndex o = nd_ref::unravel(f, out), xi(o.size());
        bool hit = true;
        for (std::size_t k = 0; k < o.size(); ++k) {
          std::int64_t rel = o[k] - cfg[k].low, step = cfg[k].interior + 1;
          hit = hit && rel >= 0 && rel % step == 0 && rel / step < s[k];
          xi[k] = rel / step;
        }
        want.push_back(hit ? xv[static_cast<std::size_t>(nd_ref::ravel(xi, s))] : pv);
      }
      CAPTURE(to_string(s));
      Array y = pad(x, full({}, pv, d), cfg);
      REQUIRE(y.shape() == out);
      CHECK(y.to_vector<double>() == want);
    }
  }
}

TEST_CASE("pad: lax.pad examples, weak padding value, and errors") {
  Array x = array({1, 2, 3});
  CHECK(pad(x, scalar(0), {{1, 2, 1}}).to_vector<int>() == std::vector<int>{0, 1, 0, 2, 0, 3, 0, 0});
  CHECK(pad(x, scalar(0), {{-1, -1, 0}}).to_vector<int>() == std::vector<int>{2});
  CHECK(pad(x, scalar(0), {{-2, 0, 1}}).to_vector<int>() == std::vector<int>{2, 0, 3});
  CHECK(pad(x, detail::weak_scalar(9.0), {{1, 0, 0}}).dtype() == DType::i32);
  CHECK(pad(zeros({0}), scalar(1.f), {{1, 1, 5}}).to_vector<float>() == std::vector<float>{1, 1});
  CHECK_THROWS_WITH_AS(pad(x, scalar(0), {{-2, -2, 0}}), doctest::Contains("pad: padding_config"), ShapeError);
  CHECK_THROWS_WITH_AS(pad(x, scalar(0), {{-2, -2, 0}}), doctest::Contains("i32[3]"), ShapeError);
  CHECK_THROWS_AS(pad(x, scalar(0), {{0, 0, -1}}), ShapeError);
  CHECK_THROWS_AS(pad(x, scalar(0), {{0, 0, 0}, {0, 0, 0}}), ShapeError);
  CHECK_THROWS_AS(pad(x, scalar(0.f), {{0, 0, 0}}), TypeError);
  CHECK_THROWS_AS(pad(x, array({0}), {{0, 0, 0}}), TypeError);
  // Extreme paddings whose padded size still fits (found by the op fuzzer): no int64 overflow.
  constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max();
  CHECK(pad(array({7}), scalar(0), {{1, 1, big}}).to_vector<int>() == std::vector<int>{0, 7, 0});
  CHECK(pad(x, scalar(0), {{-big, big - 1, 0}}).to_vector<int>() == std::vector<int>{0, 0});
  CHECK(pad(x, scalar(0), {{-(big - 3), big - 2, 0}}).to_vector<int>() == std::vector<int>{0, 0, 0, 0});
}

TEST_CASE("pad: no padding anywhere is the operand itself, recorded by no transformation") {
  const Array x = array({{1.f, 2.f}, {3.f, 4.f}});
  CHECK(pad(x, scalar(0.f), {{0, 0, 0}, {0, 0, 0}}).to_vector<float>() == x.to_vector<float>());
  // Max pooling pads its windows with a zero config, and its gradient transposes that pad: neither
  // may copy the activations (the W4 step copied four of them per call before).
  auto pooled = [](const Array& v) { return sum(nn::max_pool(v, {2, 2}, {2, 2}, "VALID")); };
  const Array img = reshape(arange(32).astype(DType::f32), {1, 4, 4, 2});
  const std::string text = jit(grad(pooled)).lower(img).as_text();
  CAPTURE(text);
  CHECK(text.find("pad[padding_config=((low=0, high=0, interior=0), (low=0, high=0, interior=0), (low=0, high=0, "
                  "interior=0), (low=0, high=0, interior=0))]") == std::string::npos);
  CHECK(grad(pooled)(img).to_vector<float>() == jit(grad(pooled))(img).to_vector<float>());
}

TEST_CASE("pad: jnp.pad constant mode, per-axis and shared widths, and its errors") {
  Array x = array({{1.f, 2.f}, {3.f, 4.f}});
  CHECK(pad(x, {{1, 0}, {0, 1}}).to_vector<float>() == std::vector<float>{0, 0, 0, 1, 2, 0, 3, 4, 0});
  CHECK(pad(x, 1, 5.0).shape() == Shape{4, 4});
  CHECK(pad(x, 1, 5.0).to_vector<float>()[0] == 5.f);
  CHECK(pad(x, {{0, 2}}).shape() == Shape{4, 4});
  CHECK(pad(array({1, 2}), {{1, 1}}, 2.5).to_vector<int>() == std::vector<int>{2, 1, 2, 2});
  CHECK_THROWS_WITH_AS(pad(x, {{-1, 0}, {0, 0}}), doctest::Contains("negative"), ShapeError);
  CHECK_THROWS_AS(pad(x, {{1, 0}, {0, 0}, {0, 0}}), ShapeError);
}
