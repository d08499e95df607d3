// reduce_window_max/sum and flax-style max_pool/avg_pool against a window loop in double:
// random NHWC and NCHW shapes with size-1 dims, strides, SAME/VALID/explicit padding (also
// padding wider than the window), base/window dilation, f32/f64/i32; and the errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include "helpers/error_message.hpp"
#include <canopy/nn.hpp>

using namespace canopy;

namespace {

using Pads = std::vector<std::pair<std::int64_t, std::int64_t>>;
using Dims = std::vector<std::int64_t>;

struct Window {
  Dims win, strides;
  Pads pads;
  Dims base, wdil;
};

Dims out_shape(const Shape& s, const Window& w) {
  Dims o;
  for (std::size_t d = 0; d < s.size(); ++d) {
    std::int64_t in = (s[d] - 1) * w.base[d] + 1 + w.pads[d].first + w.pads[d].second;
    std::int64_t win = (w.win[d] - 1) * w.wdil[d] + 1;
    o.push_back(in < win ? -1 : (in - win) / w.strides[d] + 1);
  }
  return o;
}

// For every output element, visit every window tap of the dilated, padded operand.
std::vector<double> reference(const std::vector<double>& x, const Shape& s, const Window& w, bool is_max, double pad_value) {
  Dims o = out_shape(s, w);
  const std::size_t r = s.size();
  Shape os(o), st = contiguous_strides(s);
  std::vector<double> y(static_cast<std::size_t>(shape_size(os)));
  std::vector<std::int64_t> oi(r), ki(r);
  for (std::int64_t i = 0; i < shape_size(os); ++i) {
    for (std::int64_t d = static_cast<std::int64_t>(r) - 1, rem = i; d >= 0; --d) {
      oi[d] = rem % o[d];
      rem /= o[d];
    }
    double acc = pad_value;
    for (std::int64_t t = 0; t < shape_size(Shape(w.win)); ++t) {
      std::int64_t off = 0;
      bool inside = true;
      for (std::int64_t d = static_cast<std::int64_t>(r) - 1, rem = t; d >= 0; --d) {
        ki[d] = rem % w.win[d];
        rem /= w.win[d];
        std::int64_t p = oi[d] * w.strides[d] + ki[d] * w.wdil[d] - w.pads[d].first;
        if (p < 0 || p % w.base[d] != 0 || p / w.base[d] >= s[d]) inside = false;
        else off += p / w.base[d] * st[d];
      }
      if (!inside) continue;
      double v = x[static_cast<std::size_t>(off)];
      acc = is_max ? std::max(acc, v) : acc + v;
    }
    y[static_cast<std::size_t>(i)] = acc;
  }
  return y;
}

Array random_array(const Shape& s, DType d, std::mt19937& g) {
  std::uniform_real_distribution<double> u(-4, 4);
  std::vector<double> v(static_cast<std::size_t>(shape_size(s)));
  for (auto& x : v) x = is_floating(d) ? u(g) : std::floor(u(g) * 5);
  return array(v, s).astype(d);
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)  // equal first: windows wholly in padding give -inf
    bad += !(got[i] == want[i] || std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
  CHECK(bad == 0);
}

// A random pooling window over the spatial dims of a channels-last (or channels-first) array.
Window random_window(std::mt19937& g, std::size_t rank, bool channels_last, bool dilate) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(g); };
  Window w{Dims(rank, 1), Dims(rank, 1), Pads(rank, {0, 0}), Dims(rank, 1), Dims(rank, 1)};
  for (std::size_t d = channels_last ? 1 : 2; d < (channels_last ? rank - 1 : rank); ++d) {
    w.win[d] = pick(1, 3);
    w.strides[d] = pick(1, 3);
    w.pads[d] = {pick(0, 3), pick(0, 3)};  // up to 3: wider than a window of 1-3 sometimes
    if (dilate) w.base[d] = pick(1, 2), w.wdil[d] = pick(1, 2);
  }
  return w;
}

void check_random(DType dt, bool is_max, bool channels_last, bool dilate, unsigned seed) {
  std::mt19937 g(seed);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(g); };
  int ran = 0;
  for (int i = 0; i < 60; ++i) {
    std::size_t rank = static_cast<std::size_t>(pick(3, 5));
    Shape s;
    for (std::size_t d = 0; d < rank; ++d) s.push_back(pick(1, 7));
    Window w = random_window(g, rank, channels_last, dilate);
    Array x = random_array(s, dt, g);
    CAPTURE(to_string(s));
    CAPTURE(i);
    auto run = [&] {
      return is_max ? reduce_window_max(x, w.win, w.strides, w.pads, w.base, w.wdil)
                    : reduce_window_sum(x, w.win, w.strides, w.pads, w.base, w.wdil);
    };
    Dims o = out_shape(s, w);
    if (std::find(o.begin(), o.end(), -1) != o.end()) {
      CHECK_THROWS_AS(run(), ShapeError);
      continue;
    }
    Array y = run();
    REQUIRE(y.shape() == Shape(o));
    CHECK(y.dtype() == dt);
    double pad = !is_max ? 0.0 : is_floating(dt) ? -INFINITY : double(std::numeric_limits<std::int32_t>::lowest());
    expect_close(y.to_vector<double>(), reference(x.to_vector<double>(), s, w, is_max, pad), dt == DType::f32 ? 1e-5 : 1e-12);
    ++ran;
  }
  CHECK(ran > 30);
}

}  // namespace

TEST_CASE("reduce_window_max and reduce_window_sum match the window loop (oneDNN and loop paths)") {
  for (bool is_max : {true, false})
    for (DType dt : {DType::f32, DType::f64, DType::i32}) {
      CAPTURE(is_max);
      CAPTURE(name(dt));
      check_random(dt, is_max, true, false, 1);
      check_random(dt, is_max, false, false, 2);
      check_random(dt, is_max, true, true, 3);
    }
}

TEST_CASE("reduce_window_max lets NaN through, as lax.max does") {
  Array x = array(std::vector<float>{1, NAN, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  auto y = reduce_window_max(x, {1, 2, 2, 1}, {1, 1, 1, 1}, "VALID").to_vector<float>();
  CHECK(std::isnan(y[0]));
  CHECK(std::isnan(y[1]));
  CHECK(y[2] == 8.f);
  CHECK(y[3] == 9.f);
}

TEST_CASE("reduce_window: paddings near the ends of int64 (found by the op fuzzer) pad, never overflow") {
  constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  const Array x = array({1.f, 2.f, 3.f});
  // Padded extent 3 + (lo + 3) + hi = 5: every window lies in the padding.
  CHECK(reduce_window_sum(x, {1}, {1}, Padding{{{lo + 3, hi}}}).to_vector<float>() == std::vector<float>(5, 0.f));
  CHECK(reduce_window_max(x, {1}, {1}, Padding{{{lo + 3, hi}}}).to_vector<float>() == std::vector<float>(5, -INFINITY));
  // Padded extent 3 + (3 - hi) + (hi - 1) = 5, windows of 2: offsets up to hi + 1 before the low pad.
  CHECK(reduce_window_sum(x, {2}, {1}, Padding{{{3 - hi, hi - 1}}}).to_vector<float>() == std::vector<float>(4, 0.f));
}

TEST_CASE("max_pool and avg_pool follow flax on NHWC input") {
  std::mt19937 g(5);
  Array x = random_array({2, 6, 7, 3}, DType::f32, g);
  auto xv = x.to_vector<double>();
  Window w2{{1, 2, 2, 1}, {1, 2, 2, 1}, Pads(4, {0, 0}), Dims(4, 1), Dims(4, 1)};
  expect_close(nn::max_pool(x, {2, 2}, {2, 2}).to_vector<double>(), reference(xv, x.shape(), w2, true, -INFINITY), 1e-6);
  // SAME 3x3 stride 1: one element of padding on each side.
  Window w3{{1, 3, 3, 1}, {1, 1, 1, 1}, {{0, 0}, {1, 1}, {1, 1}, {0, 0}}, Dims(4, 1), Dims(4, 1)};
  Array mp = nn::max_pool(x, {3, 3}, {1, 1}, "SAME");
  CHECK(mp.shape() == Shape{2, 6, 7, 3});
  expect_close(mp.to_vector<double>(), reference(xv, x.shape(), w3, true, -INFINITY), 1e-6);
  // avg_pool divides by the window size (count_include_pad), or by the real elements.
  auto sums = reference(xv, x.shape(), w3, false, 0);
  auto ones_sums = reference(std::vector<double>(xv.size(), 1.0), x.shape(), w3, false, 0);
  std::vector<double> incl(sums), excl(sums);
  for (std::size_t i = 0; i < sums.size(); ++i) incl[i] /= 9, excl[i] /= ones_sums[i];
  expect_close(nn::avg_pool(x, {3, 3}, {1, 1}, "SAME").to_vector<double>(), incl, 1e-5);
  expect_close(nn::avg_pool(x, {3, 3}, {1, 1}, "SAME", false).to_vector<double>(), excl, 1e-5);
  // Explicit padding pairs cover the spatial dims only.
  Array ep = nn::avg_pool(x, {2, 2}, {1, 1}, Pads{{1, 0}, {0, 1}}, false);
  CHECK(ep.shape() == Shape{2, 6, 7, 3});
  // Unbatched (H, W, C) input and several batch dims.
  Array single = nn::max_pool(reshape(x, {12, 7, 3}), {2, 2}, {2, 2});
  CHECK(single.shape() == Shape{6, 3, 3});
  Array multi = nn::max_pool(reshape(x, {1, 2, 6, 7, 3}), {2, 2}, {2, 2});
  CHECK(multi.shape() == Shape{1, 2, 3, 3, 3});
  expect_close(multi.to_vector<double>(), nn::max_pool(x, {2, 2}, {2, 2}).to_vector<double>(), 0);
  // Integers: max keeps the dtype, avg gives floats.
  Array xi = array(std::vector<int>{1, 2, 3, 4}, {1, 2, 2, 1});
  CHECK(nn::max_pool(xi, {2, 2}).item<int>() == 4);
  CHECK(nn::avg_pool(xi, {2, 2}).item<float>() == 2.5f);
  // Size-0 batch and size-1 windows.
  CHECK(nn::max_pool(zeros({0, 4, 4, 2}), {2, 2}, {2, 2}).shape() == Shape{0, 2, 2, 2});
  expect_close(nn::avg_pool(x, {1, 1}).to_vector<double>(), xv, 1e-7);
}

TEST_CASE("pooling and reduce_window raise ShapeError naming the op and shapes") {
  Array x = zeros({1, 3, 3, 2});
  std::string m = error_message<ShapeError>([&] { nn::max_pool(x, {5, 5}); });
  CHECK(m.find("max_pool") == 0);
  CHECK(m.find("f32[1,3,3,2]") != std::string::npos);
  m = error_message<ShapeError>([&] { nn::avg_pool(x, {4, 1}, {1, 1}, "VALID"); });
  CHECK(m.find("avg_pool") == 0);
  CHECK_NOTHROW(nn::max_pool(x, {5, 5}, {1, 1}, "SAME"));
  CHECK(error_message<ShapeError>([&] { nn::max_pool(x, {2, 2, 2, 2}); }).find("max_pool: window_shape") == 0);
  CHECK_THROWS_AS(nn::max_pool(x, {2, 2}, {1}), ShapeError);
  CHECK_THROWS_AS(nn::max_pool(x, {2, 2}, {1, 1}, Pads{{1, 1}}), ShapeError);
  CHECK_THROWS_AS(nn::max_pool(x, {2, 2}, {1, 1}, "HALF"), ShapeError);
  m = error_message<ShapeError>([&] { reduce_window_max(x, {1, 4, 1, 1}, {1, 1, 1, 1}, "VALID"); });
  CHECK(m.find("reduce_window_max: window") == 0);
  CHECK(m.find("f32[1,3,3,2]") != std::string::npos);
  CHECK_THROWS_AS(reduce_window_sum(x, {1, 2, 2}, {1, 1, 1}, "VALID"), ShapeError);
  CHECK_THROWS_AS(reduce_window_sum(x, {1, 2, 2, 1}, {1, 0, 1, 1}, "VALID"), ShapeError);
  CHECK_THROWS_AS(reduce_window_sum(x, {1, 0, 2, 1}, {1, 1, 1, 1}, "VALID"), ShapeError);
  CHECK_THROWS_AS(reduce_window_sum(zeros({2, 2}, DType::bool_), {1, 1}, {1, 1}, "VALID"), TypeError);
}
