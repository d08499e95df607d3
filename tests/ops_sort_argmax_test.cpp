// erf_inv, nextafter, the shifts, prod/reduce_prod, argmax/argmin and sort/argsort against plain
// loops (f64 or long double) on random shapes with size-0/1 dims and transposed inputs, and their
// errors. These are the ops the PRNG samplers are built from.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

#include "helpers/nd_ref.hpp"

using namespace canopy;

namespace {

// Distance in units in the last place between two finite floats of type T.
template <class T>
std::int64_t ulps(T a, T b) {
  using I = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
  I ia, ib;
  std::memcpy(&ia, &a, sizeof(T));
  std::memcpy(&ib, &b, sizeof(T));
  if (ia < 0) ia = std::numeric_limits<I>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<I>::min() - ib;
  return std::abs(static_cast<std::int64_t>(ia) - static_cast<std::int64_t>(ib));
}

// erf_inv(x) in long double by Newton's method on erfl from a close start.
long double erf_inv_ref(long double x, long double y) {
  for (int i = 0; i < 6; ++i) y -= (std::erf(y) - x) / (2 / std::sqrt(3.14159265358979323846264338L) * std::exp(-y * y));
  return y;
}

template <class T>
void check_erf_inv(DType d, std::int64_t max_ulps, double tail_rel) {
  std::mt19937 g(5);
  std::uniform_real_distribution<double> u(-0.99, 0.99), tail(0.99, 1);
  std::vector<T> xs, ts;
  for (int i = 0; i < 20000; ++i) xs.push_back(static_cast<T>(u(g)));
  for (T t : {T(1e-30), T(0.5), T(-0.75)}) xs.push_back(t);
  for (int i = 0; i < 5000; ++i) ts.push_back(static_cast<T>(i % 2 ? tail(g) : -tail(g)));
  ts.push_back(T(1) - std::numeric_limits<T>::epsilon());
  const auto ys = erf_inv(array(xs, Shape{static_cast<std::int64_t>(xs.size())})).template to_vector<T>();
  std::int64_t worst = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) worst = std::max(worst, ulps(ys[i], static_cast<T>(erf_inv_ref(xs[i], ys[i]))));
  // Near +-1, 1 - x*x cancels (XLA evaluates -log1p(-x*x) too, and canopy keeps its formula so that
  // normal() agrees with JAX): the error there is relative, up to ~65 ulp in f32.
  const auto yt = erf_inv(array(ts, Shape{static_cast<std::int64_t>(ts.size())})).template to_vector<T>();
  double worst_rel = 0;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const long double ref = erf_inv_ref(ts[i], yt[i]);
    worst_rel = std::max(worst_rel, static_cast<double>(std::fabs((yt[i] - ref) / ref)));
  }
  MESSAGE(name(d) << " erf_inv: worst " << worst << " ulp on |x| < 0.99, relative " << worst_rel << " beyond");
  CHECK(worst <= max_ulps);
  CHECK(worst_rel <= tail_rel);
}

}  // namespace

TEST_CASE("erf_inv is within a few ulp in f32 and f64 on |x| < 0.99, infinite at +-1, NaN outside") {
  SUBCASE("f32") { check_erf_inv<float>(DType::f32, 5, 1e-5); }
  SUBCASE("f64") { check_erf_inv<double>(DType::f64, 5, 1e-12); }
  const auto e = erf_inv(array({1.0f, -1.0f, 0.0f, 1.5f})).to_vector<float>();
  CHECK(e[0] == std::numeric_limits<float>::infinity());
  CHECK(e[1] == -std::numeric_limits<float>::infinity());
  CHECK(e[2] == 0.0f);
  CHECK(std::isnan(e[3]));
  // Integers promote to f32, as jnp does for float-only functions; a transposed input works.
  CHECK(erf_inv(array({0, 0})).dtype() == DType::f32);
  const Array m = array({{0.1, 0.2, 0.3}, {-0.4, -0.5, 0.6}});
  CHECK(erf_inv(transpose(m)).to_vector<double>() == erf_inv(transpose(m) + 0.0).to_vector<double>());
  CHECK(erf_inv(transpose(m)).to_vector<double>()[1] == erf_inv(scalar(-0.4)).item<double>());
}

TEST_CASE("nextafter steps one float towards y, broadcasting, floats only") {
  const Array x = array({1.0f, -1.0f, 0.0f, 3.0f});
  const auto up = nextafter(x, scalar(std::numeric_limits<float>::infinity())).to_vector<float>();
  for (std::size_t i = 0; i < 4; ++i)
    CHECK(up[i] == std::nextafter(x.to_vector<float>()[i], std::numeric_limits<float>::infinity()));
  CHECK(up[2] == std::numeric_limits<float>::denorm_min());  // bit-level, unaffected by flush-to-zero
  CHECK(nextafter(array({2.0}), array({2.0})).item<double>() == 2.0);
  CHECK(nextafter(array({1, 2}), array({3, 0})).dtype() == DType::f32);  // integers promote, as jnp
  CHECK_THROWS_AS(nextafter(array({1.0f, 2.0f}), array({1.0f, 2.0f, 3.0f})), ShapeError);
}

TEST_CASE("shifts follow XLA on i32 and u32, including out-of-range and negative amounts") {
  std::mt19937 g(11);
  std::uniform_int_distribution<std::int64_t> v(std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max());
  std::uniform_int_distribution<int> amt(-3, 35);
  for (DType d : {DType::i32, DType::u32}) {
    CAPTURE(name(d));
    std::vector<double> xs, ss;
    for (int i = 0; i < 400; ++i) {
      const std::int64_t x = v(g);
      xs.push_back(d == DType::u32 ? static_cast<double>(static_cast<std::uint32_t>(x)) : static_cast<double>(x));
      ss.push_back(amt(g));
    }
    const Array x = array(xs, Shape{20, 20}).astype(d);
    // Negative amounts: as u32 they are huge, i.e. out of range (give them as i32 -> wrap for u32).
    const Array s = d == DType::u32 ? array(ss, Shape{20, 20}).astype(DType::i32).astype(DType::u32) : array(ss, Shape{20, 20}).astype(d);
    const Array xt = transpose(transpose(x));
    const auto l = shift_left(xt, s).to_vector<double>(), rl = shift_right_logical(x, s).to_vector<double>(),
               ra = shift_right_arithmetic(x, s).to_vector<double>();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const auto bits = d == DType::u32 ? static_cast<std::uint32_t>(xs[i]) : static_cast<std::uint32_t>(static_cast<std::int32_t>(xs[i]));
      const auto sh = static_cast<std::uint32_t>(static_cast<std::int32_t>(ss[i]));
      const std::uint32_t top = (bits >> 31) ? 0xFFFFFFFFu : 0u;
      const std::uint32_t el = sh >= 32 ? 0 : bits << sh, erl = sh >= 32 ? 0 : bits >> sh;
      const std::uint32_t era = sh >= 32 ? top : (sh == 0 ? bits : (bits >> sh) | (top << (32 - sh)));
      auto as_d = [&](std::uint32_t w) {
        return d == DType::u32 ? static_cast<double>(w) : static_cast<double>(static_cast<std::int32_t>(w));
      };
      CHECK(l[i] == as_d(el));
      CHECK(rl[i] == as_d(erl));
      CHECK(ra[i] == as_d(era));
    }
  }
  // Broadcasting with a weak scalar amount, and jnp.right_shift's choice by signedness.
  CHECK(shift_left(array({1, 2, 3}), detail::weak_scalar_of(4)).to_vector<int>() == std::vector<int>{16, 32, 48});
  CHECK(right_shift(array({-8}), array({1})).item<int>() == -4);
  CHECK(right_shift(array({0x80000000u}), array({4u})).item<std::uint32_t>() == 0x08000000u);
  CHECK(shift_left(zeros({0, 3}, DType::i32), array({1, 2, 3})).shape() == Shape{0, 3});
  // Both operands broadcast ([2,1,3] against [4,1]), as numpy does.
  const Array bx = reshape(arange(6), {2, 1, 3}), bs = reshape(arange(4), {4, 1});
  const auto bl = shift_left(bx, bs).to_vector<int>();
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 4; ++j)
      for (std::int64_t k = 0; k < 3; ++k) CHECK(bl[static_cast<std::size_t>((i * 4 + j) * 3 + k)] == (i * 3 + k) << j);
  const auto na = nextafter(reshape(array({1.0f, 2.0f}), {2, 1}), array({0.0f, 5.0f, 1.0f})).to_vector<float>();
  CHECK(na == std::vector<float>{std::nextafter(1.0f, 0.0f), std::nextafter(1.0f, 5.0f), 1.0f,
                                 std::nextafter(2.0f, 0.0f), std::nextafter(2.0f, 5.0f), std::nextafter(2.0f, 1.0f)});
  CHECK_THROWS_AS(shift_left(array({1.0f}), array({1.0f})), TypeError);
  CHECK_THROWS_AS(shift_right_logical(array(std::vector<bool>{true}, Shape{1}), array(std::vector<bool>{true}, Shape{1})),
                  TypeError);
  CHECK_THROWS_AS(shift_left(array({1, 2}), array({1, 2, 3})), ShapeError);
}

TEST_CASE("prod and reduce_prod match a plain loop over every axis subset, with keepdims") {
  std::mt19937 g(3);
  for (int trial = 0; trial < 25; ++trial) {
    const Shape s = nd_ref::random_shape(g, 0, 4);
    for (DType d : {DType::f32, DType::f64, DType::i32}) {
      const Array x = trial % 2 ? nd_ref::transposed_values(s, d, static_cast<unsigned>(trial)) : nd_ref::values(s, d, static_cast<unsigned>(trial));
      // Keep products small and exact: values in [-20, 20] scaled to {-1, 1, 2}.
      const Array y = where(x > 10, full_like(x, 2), where(x > 0, full_like(x, 1), full_like(x, -1)));
      const auto yv = y.to_vector<double>();
      const unsigned n = static_cast<unsigned>(s.size());
      for (unsigned mask = 0; mask < (1u << n); ++mask) {
        std::vector<int> axes;
        for (unsigned i = 0; i < n; ++i) if (mask >> i & 1u) axes.push_back(static_cast<int>(i));
        Shape kept, keep_shape = s;
        for (unsigned i = 0; i < n; ++i) {
          if (!(mask >> i & 1u)) kept.push_back(s[i]);
          else keep_shape[i] = 1;
        }
        std::vector<double> ref(static_cast<std::size_t>(shape_size(kept)), 1.0);
        for (std::int64_t i = 0; i < shape_size(s); ++i) {
          auto ix = nd_ref::unravel(i, s);
          nd_ref::MultiIndex o;
          for (unsigned k = 0; k < n; ++k) if (!(mask >> k & 1u)) o.push_back(ix[k]);
          ref[static_cast<std::size_t>(nd_ref::ravel(o, kept))] *= yv[static_cast<std::size_t>(i)];
        }
        CAPTURE(to_string(s));
        CAPTURE(mask);
        const Array p = prod(y, Axes{axes}, mask % 2 == 1);
        CHECK(p.dtype() == d);
        CHECK(p.shape() == (mask % 2 == 1 ? keep_shape : kept));
        CHECK(p.to_vector<double>() == ref);
      }
    }
  }
  CHECK(prod(array(std::vector<bool>{true, false}, Shape{2})).dtype() == DType::i32);
  CHECK(prod(zeros({0})).item<float>() == 1.0f);
  CHECK(prod(array({65536, 65536, 3})).item<int>() == 0);  // wraps like XLA's int32 multiply
  CHECK_THROWS_AS(prod(ones({2, 3}), 2), ShapeError);
}

TEST_CASE("argmax and argmin take the first extremum, the first NaN, over any axis or all") {
  std::mt19937 g(7);
  for (int trial = 0; trial < 30; ++trial) {
    Shape s = nd_ref::random_shape(g, 1, 3);
    for (auto& dim : s) dim = std::max<std::int64_t>(dim, 1);  // empty axes are errors, tested below
    const Array x = trial % 2 ? nd_ref::transposed_values(s, DType::f32, static_cast<unsigned>(trial))
                              : nd_ref::values(s, DType::i32, static_cast<unsigned>(trial));  // many ties
    const auto xv = x.to_vector<double>();
    for (int ax = 0; ax < static_cast<int>(s.size()); ++ax) {
      Shape kept;
      for (int k = 0; k < static_cast<int>(s.size()); ++k) if (k != ax) kept.push_back(s[static_cast<std::size_t>(k)]);
      std::vector<double> best(static_cast<std::size_t>(shape_size(kept)), -1), lo(best.size(), -1);
      std::vector<double> bv(best.size(), -1e300), lv(best.size(), 1e300);
      for (std::int64_t i = 0; i < shape_size(s); ++i) {
        auto ix = nd_ref::unravel(i, s);
        nd_ref::MultiIndex o;
        for (int k = 0; k < static_cast<int>(s.size()); ++k) if (k != ax) o.push_back(ix[static_cast<std::size_t>(k)]);
        const auto j = static_cast<std::size_t>(nd_ref::ravel(o, kept));
        const double v = xv[static_cast<std::size_t>(i)];
        // Row-major order visits each row's positions in increasing index: strict > keeps the first.
        if (v > bv[j]) { bv[j] = v; best[j] = static_cast<double>(ix[static_cast<std::size_t>(ax)]); }
        if (v < lv[j]) { lv[j] = v; lo[j] = static_cast<double>(ix[static_cast<std::size_t>(ax)]); }
      }
      CAPTURE(to_string(s));
      CAPTURE(ax);
      CHECK(argmax(x, ax).dtype() == DType::i32);
      CHECK(argmax(x, ax).to_vector<double>() == best);
      CHECK(argmin(x, ax - static_cast<int>(s.size())).to_vector<double>() == lo);
      CHECK(argmax(x, ax, DType::u32).dtype() == DType::u32);
    }
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(argmax(array({1.0f, nan, 5.0f, nan})).item<int>() == 1);
  CHECK(argmin(array({1.0f, -2.0f, nan})).item<int>() == 2);
  CHECK(argmax(array({{1, 9}, {9, 3}})).item<int>() == 1);  // all axes: the flattened index
  CHECK(argmax(array({{1, 9}, {9, 3}}), std::nullopt, true).shape() == Shape{1, 1});
  CHECK(argmin(array({{1, 9}, {0, 3}}), 0, true).to_vector<int>() == std::vector<int>{1, 1});
  CHECK(argmax(array(std::vector<bool>{false, true, true}, Shape{3})).item<int>() == 1);
  CHECK_THROWS_AS(argmax(zeros({2, 0}), 1), ShapeError);
  CHECK_THROWS_AS(argmax(zeros({0})), ShapeError);
  CHECK_THROWS_AS(argmin(zeros({2, 3}), 2), ShapeError);
  CHECK_THROWS_AS(argmax(zeros({2}), 0, DType::f32), TypeError);
}

TEST_CASE("sort and argsort are stable, order NaN last and -0 with 0, and carry values along") {
  std::mt19937 g(9);
  for (int trial = 0; trial < 30; ++trial) {
    const Shape s = nd_ref::random_shape(g, 1, 3);
    const int ax = static_cast<int>(g() % s.size());
    const Array keys = trial % 2 ? nd_ref::transposed_values(s, DType::f32, static_cast<unsigned>(trial))
                                 : nd_ref::values(s, DType::i32, static_cast<unsigned>(trial));
    const Array vals = iota(DType::i32, s, ax);  // position along the axis
    auto [sk, sv] = sort_key_val(keys, vals, ax);
    const Array order = argsort(keys, ax);
    const auto kv = keys.to_vector<double>(), skv = sk.to_vector<double>();
    const auto svv = sv.to_vector<double>(), ov = order.to_vector<double>();
    // Reference: each line along `ax` sorted with std::stable_sort of its positions.
    for (std::int64_t i = 0; i < shape_size(s); ++i) {
      auto ix = nd_ref::unravel(i, s);
      if (ix[static_cast<std::size_t>(ax)] != 0) continue;
      std::vector<std::int64_t> pos(static_cast<std::size_t>(s[static_cast<std::size_t>(ax)]));
      std::iota(pos.begin(), pos.end(), 0);
      auto at = [&](std::int64_t p) {
        auto j = ix;
        j[static_cast<std::size_t>(ax)] = p;
        return nd_ref::ravel(j, s);
      };
      std::stable_sort(pos.begin(), pos.end(), [&](auto a, auto b) {
        return kv[static_cast<std::size_t>(at(a))] < kv[static_cast<std::size_t>(at(b))];
      });
      for (std::size_t p = 0; p < pos.size(); ++p) {
        const auto o = static_cast<std::size_t>(at(static_cast<std::int64_t>(p)));
        CHECK(skv[o] == kv[static_cast<std::size_t>(at(pos[p]))]);
        CHECK(svv[o] == static_cast<double>(pos[p]));
        CHECK(ov[o] == static_cast<double>(pos[p]));
      }
    }
    CHECK(sort(keys, ax).to_vector<double>() == skv);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const auto sorted = sort(array({nan, 2.0f, -inf, 0.0f, -0.0f, nan, -1.0f})).to_vector<float>();
  CHECK(sorted[0] == -inf);
  CHECK(sorted[1] == -1.0f);
  CHECK((!std::signbit(sorted[2]) && std::signbit(sorted[3])));  // 0.0 came before -0.0: equal keys keep their order
  CHECK(std::isnan(sorted[5]));
  CHECK(std::isnan(sorted[6]));
  CHECK(argsort(array({3, 1, 3, 1, 2})).to_vector<int>() == std::vector<int>{1, 3, 4, 0, 2});
  CHECK(sort(array({{3, 1}, {2, 0}}), std::nullopt).to_vector<int>() == std::vector<int>{0, 1, 2, 3});
  // Two keys: lexicographic on (first, second), the third operand follows.
  auto r = sort({array({1, 0, 1, 0}), array({2.0f, 5.0f, 1.0f, 4.0f}), array({10u, 20u, 30u, 40u})}, 0, true, 2);
  CHECK(r[2].to_vector<std::uint32_t>() == std::vector<std::uint32_t>{40u, 20u, 30u, 10u});
  CHECK(sort(zeros({3, 0})).shape() == Shape{3, 0});
  CHECK_THROWS_AS(sort({array({1, 2}), array({1, 2, 3})}), ShapeError);
  CHECK_THROWS_AS(sort(scalar(1.0f), 0), ShapeError);
  CHECK_THROWS_AS(sort({array({1, 2})}, 0, true, 2), ShapeError);
}
