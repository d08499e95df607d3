// conv_general_dilated against a direct convolution loop in double: random shapes with size-1
// dims, strides, SAME/VALID/explicit padding, lhs and rhs dilation, feature groups, NHWC/HWIO and
// NCHW/OIHW (and mixed) layouts, 1-D and 3-D, transposed inputs, empty dims; and every error.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include "helpers/error_message.hpp"

using namespace canopy;

namespace {

using Pads = std::vector<std::pair<std::int64_t, std::int64_t>>;

struct Case {
  std::string lhs, rhs, out;  // layouts; spatial letters appear in the same order in all three
  std::int64_t n = 1, c = 1, o = 1, groups = 1;
  std::vector<std::int64_t> in, k, strides, lhs_dil, rhs_dil;
  Pads pads;
};

// Shape of an operand in `layout`, given the sizes of its two named dims and of the spatial dims.
Shape shape_in(const std::string& layout, char a, std::int64_t na, char b, std::int64_t nb,
               const std::vector<std::int64_t>& spatial) {
  Shape s;
  std::size_t sp = 0;
  for (char ch : layout) s.push_back(ch == a ? na : ch == b ? nb : spatial[sp++]);
  return s;
}

// Element strides of the named dims and of the spatial dims (padded to 3 with stride 0).
struct Strides {
  std::int64_t a = 0, b = 0, sp[3] = {0, 0, 0};
};
Strides strides_of(const std::string& layout, const Shape& s, char a, char b) {
  Strides r;
  Shape st = contiguous_strides(s);
  std::size_t sp = 0;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    if (layout[i] == a) r.a = st[i];
    else if (layout[i] == b) r.b = st[i];
    else r.sp[sp++] = st[i];
  }
  return r;
}

std::vector<std::int64_t> out_spatial(const Case& t) {
  std::vector<std::int64_t> o;
  for (std::size_t d = 0; d < t.in.size(); ++d) {
    std::int64_t in = (t.in[d] - 1) * t.lhs_dil[d] + 1 + t.pads[d].first + t.pads[d].second;
    std::int64_t win = (t.k[d] - 1) * t.rhs_dil[d] + 1;
    o.push_back(in < win ? -1 : (in - win) / t.strides[d] + 1);
  }
  return o;
}

// The direct loop: batch, out feature, 3 output positions, in feature, 3 window taps.
std::vector<double> reference(const Case& t, const std::vector<double>& x, const Shape& xs, const std::vector<double>& w,
                              const Shape& ws, const Shape& ys) {
  const std::size_t nsp = t.in.size();
  auto pad3 = [&](const std::vector<std::int64_t>& v, std::int64_t fill) {
    std::vector<std::int64_t> r(v);
    r.resize(3, fill);
    return r;
  };
  auto in = pad3(t.in, 1), k = pad3(t.k, 1), st = pad3(t.strides, 1), ld = pad3(t.lhs_dil, 1), rd = pad3(t.rhs_dil, 1);
  auto out = pad3(out_spatial(t), 1);
  std::vector<std::int64_t> lo(3, 0);
  for (std::size_t d = 0; d < nsp; ++d) lo[d] = t.pads[d].first;
  Strides xs_ = strides_of(t.lhs, xs, 'N', 'C'), ws_ = strides_of(t.rhs, ws, 'O', 'I'), ys_ = strides_of(t.out, ys, 'N', 'C');
  std::vector<double> y(static_cast<std::size_t>(shape_size(ys)), 0.0);
  const std::int64_t cg = t.c / t.groups, og = t.o / t.groups;
  for (std::int64_t n = 0; n < t.n; ++n)
    for (std::int64_t oc = 0; oc < t.o; ++oc)
      for (std::int64_t o0 = 0; o0 < out[0]; ++o0)
        for (std::int64_t o1 = 0; o1 < out[1]; ++o1)
          for (std::int64_t o2 = 0; o2 < out[2]; ++o2) {
            double acc = 0;
            for (std::int64_t ic = 0; ic < cg; ++ic)
              for (std::int64_t k0 = 0; k0 < k[0]; ++k0)
                for (std::int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (std::int64_t k2 = 0; k2 < k[2]; ++k2) {
                    std::int64_t os[3] = {o0, o1, o2}, ks[3] = {k0, k1, k2}, off = n * xs_.a + (oc / og * cg + ic) * xs_.b;
                    bool inside = true;
                    for (int d = 0; d < 3; ++d) {
                      std::int64_t p = os[d] * st[d] + ks[d] * rd[d] - lo[d];
                      if (p < 0 || p % ld[d] != 0 || p / ld[d] >= in[d]) inside = false;
                      else off += p / ld[d] * xs_.sp[d];
                    }
                    if (!inside) continue;
                    acc += x[static_cast<std::size_t>(off)] *
                           w[static_cast<std::size_t>(oc * ws_.a + ic * ws_.b + k0 * ws_.sp[0] + k1 * ws_.sp[1] + k2 * ws_.sp[2])];
                  }
            y[static_cast<std::size_t>(n * ys_.a + oc * ys_.b + o0 * ys_.sp[0] + o1 * ys_.sp[1] + o2 * ys_.sp[2])] = acc;
          }
  return y;
}

Array random_array(const Shape& s, DType d, std::mt19937& g) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<std::size_t>(shape_size(s)));
  for (auto& x : v) x = u(g);
  return array(v, s).astype(d);
}

// Runs one case; returns false (after checking the error) when the window does not fit.
bool check_case(const Case& t, DType dt, std::mt19937& g) {
  Shape xs = shape_in(t.lhs, 'N', t.n, 'C', t.c, t.in), ws = shape_in(t.rhs, 'O', t.o, 'I', t.c / t.groups, t.k);
  Array x = random_array(xs, dt, g), w = random_array(ws, dt, g);
  auto os = out_spatial(t);
  for (auto o : os)
    if (o < 0) {
      CHECK_THROWS_AS(conv_general_dilated(x, w, t.strides, t.pads, t.lhs_dil, t.rhs_dil, {t.lhs, t.rhs, t.out}, t.groups),
                      ShapeError);
      return false;
    }
  Array y = conv_general_dilated(x, w, t.strides, t.pads, t.lhs_dil, t.rhs_dil, {t.lhs, t.rhs, t.out}, t.groups);
  Shape ys = shape_in(t.out, 'N', t.n, 'C', t.o, os);
  REQUIRE(to_string(y.shape()) == to_string(ys));
  CHECK(y.dtype() == dt);
  auto want = reference(t, x.to_vector<double>(), xs, w.to_vector<double>(), ws, ys);
  auto got = y.to_vector<double>();
  const double tol = dt == DType::f64 ? 1e-11 : 2e-5 * std::sqrt(double(t.c * shape_size(t.k)) + 1);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) bad += std::fabs(got[i] - want[i]) > tol * (1 + std::fabs(want[i]));
  CHECK(bad == 0);
  return true;
}

Case random_case(std::mt19937& g, std::size_t nsp, const std::string& lhs, const std::string& rhs, const std::string& out,
                 bool lhs_dilation) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(g); };
  Case t;
  t.lhs = lhs, t.rhs = rhs, t.out = out;
  t.groups = pick(0, 2) == 0 ? pick(2, 3) : 1;
  t.n = pick(1, 3);
  t.c = t.groups * pick(1, 4);
  t.o = t.groups * pick(1, 4);
  for (std::size_t d = 0; d < nsp; ++d) {
    t.in.push_back(pick(1, 9));
    t.k.push_back(pick(1, 3));
    t.strides.push_back(pick(1, 3));
    t.lhs_dil.push_back(lhs_dilation ? pick(1, 2) : 1);
    t.rhs_dil.push_back(pick(1, 2));
    t.pads.push_back({pick(0, 2), pick(0, 2)});
  }
  return t;
}

}  // namespace

TEST_CASE("conv_general_dilated matches the direct loop on random 2-D cases in both layouts") {
  const char* layouts[][3] = {{"NHWC", "HWIO", "NHWC"}, {"NCHW", "OIHW", "NCHW"}, {"NHWC", "OIHW", "NCHW"},
                              {"CHWN", "IHWO", "HWCN"}};
  std::mt19937 g(42);
  for (DType dt : {DType::f32, DType::f64})
    for (auto& l : layouts) {
      CAPTURE(l[0]);
      int ran = 0;
      for (int i = 0; i < 40; ++i) {
        Case t = random_case(g, 2, l[0], l[1], l[2], i % 5 == 4);
        CAPTURE(i);
        ran += check_case(t, dt, g);
      }
      CHECK(ran > 20);
    }
}

TEST_CASE("conv_general_dilated handles 1-D and 3-D convolutions") {
  std::mt19937 g(7);
  for (DType dt : {DType::f32, DType::f64})
    for (int i = 0; i < 15; ++i) {
      check_case(random_case(g, 1, "NWC", "WIO", "NWC", false), dt, g);
      check_case(random_case(g, 1, "NCW", "OIW", "NCW", i % 3 == 0), dt, g);
      check_case(random_case(g, 3, "NDHWC", "DHWIO", "NDHWC", false), dt, g);
    }
}

TEST_CASE("conv_general_dilated on the benchmark geometry (NHWC 3x3 SAME, 32 -> 64 features)") {
  std::mt19937 g(3);
  Case t{"NHWC", "HWIO", "NHWC", 2, 32, 64, 1, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}};
  CHECK(check_case(t, DType::f32, g));
}

TEST_CASE("string padding follows lax: SAME gives ceil(in / stride) outputs, VALID none") {
  Array x = ones({1, 7, 8, 2}), w = ones({3, 3, 2, 1});
  const ConvDimensionNumbers dn{"NHWC", "HWIO", "NHWC"};
  CHECK(conv_general_dilated(x, w, {2, 3}, "SAME", {}, {}, dn).shape() == Shape{1, 4, 3, 1});
  CHECK(conv_general_dilated(x, w, {2, 3}, "same", {}, {}, dn).shape() == Shape{1, 4, 3, 1});
  CHECK(conv_general_dilated(x, w, {2, 3}, "VALID", {}, {}, dn).shape() == Shape{1, 3, 2, 1});
  CHECK(conv_general_dilated(x, w, {1, 1}, "SAME", {}, {2, 2}, dn).shape() == Shape{1, 7, 8, 1});
  // A 2x2 window of ones over ones: SAME pads one element high (lax), so the last row/col sees half.
  Array y = conv_general_dilated(ones({1, 1, 3, 3}), ones({1, 1, 2, 2}), {1, 1}, "SAME");
  CHECK(y.to_vector<float>() == std::vector<float>{4, 4, 2, 4, 4, 2, 2, 2, 1});
  Array z = conv_general_dilated(ones({1, 1, 3, 3}), ones({1, 1, 2, 2}), {1, 1}, "SAME_LOWER");
  CHECK(z.to_vector<float>() == std::vector<float>{1, 2, 2, 2, 4, 4, 2, 4, 4});
}

TEST_CASE("conv_general_dilated reads transposed operands and handles empty dims") {
  std::mt19937 g(11);
  Array x_nchw = random_array({2, 3, 5, 4}, DType::f32, g), w_oihw = random_array({4, 3, 2, 2}, DType::f32, g);
  Array x = transpose(x_nchw, {0, 2, 3, 1}), w = transpose(w_oihw, {2, 3, 1, 0});
  Array a = conv_general_dilated(x, w, {1, 1}, "VALID", {}, {}, {"NHWC", "HWIO", "NHWC"});
  Array b = conv_general_dilated(x_nchw, w_oihw, {1, 1}, "VALID");
  auto av = transpose(a, {0, 3, 1, 2}).to_vector<float>(), bv = b.to_vector<float>();
  REQUIRE(av.size() == bv.size());
  for (std::size_t i = 0; i < av.size(); ++i) CHECK(av[i] == doctest::Approx(bv[i]).epsilon(1e-5));
  // Empty batch, empty features (a sum over nothing is 0), size-1 everything.
  CHECK(conv_general_dilated(zeros({0, 2, 4, 4}), zeros({3, 2, 2, 2}), {1, 1}, "VALID").shape() == Shape{0, 3, 3, 3});
  Array e = conv_general_dilated(zeros({1, 0, 4, 4}), ones({3, 0, 2, 2}), {1, 1}, "VALID");
  CHECK(e.shape() == Shape{1, 3, 3, 3});
  for (float v : e.to_vector<float>()) CHECK(v == 0.f);
  Array one = conv_general_dilated(full({1, 1, 1, 1}, 2.f), full({1, 1, 1, 1}, 3.f), {1, 1}, "SAME");
  CHECK(one.item<float>() == 6.f);
  // Operands promote as in jnp: f32 with f64 computes in f64.
  CHECK(conv_general_dilated(ones({1, 1, 2, 2}), ones({1, 1, 1, 1}, DType::f64), {1, 1}, "VALID").dtype() == DType::f64);
}

TEST_CASE("conv_general_dilated raises ShapeError/TypeError naming the op and the shapes") {
  const ConvDimensionNumbers dn{"NHWC", "HWIO", "NHWC"};
  // Feature mismatch, plain and with groups.
  std::string m = error_message([&] { conv_general_dilated(zeros({1, 5, 5, 3}), zeros({3, 3, 4, 8}), {1, 1}, "SAME", {}, {}, dn); });
  CHECK(m.find("conv_general_dilated") == 0);
  CHECK(m.find("f32[1,5,5,3]") != std::string::npos);
  CHECK(m.find("f32[3,3,4,8]") != std::string::npos);
  CHECK_THROWS_AS(conv_general_dilated(zeros({1, 5, 5, 4}), zeros({3, 3, 4, 8}), {1, 1}, "SAME", {}, {}, dn, 2), ShapeError);
  CHECK_THROWS_AS(conv_general_dilated(zeros({1, 5, 5, 4}), zeros({3, 3, 2, 7}), {1, 1}, "SAME", {}, {}, dn, 2), ShapeError);
  CHECK_NOTHROW(conv_general_dilated(zeros({1, 5, 5, 4}), zeros({3, 3, 2, 8}), {1, 1}, "SAME", {}, {}, dn, 2));
  CHECK_THROWS_AS(conv_general_dilated(zeros({1, 5, 5, 4}), zeros({3, 3, 2, 8}), {1, 1}, "SAME", {}, {}, dn, 0), ShapeError);
  // Bad dimension-number strings.
  Array x = zeros({1, 5, 5, 3}), w = zeros({3, 3, 3, 8});
  for (ConvDimensionNumbers bad : {ConvDimensionNumbers{"NHW", "HWIO", "NHWC"}, {"NHWX", "HWIO", "NHWC"},
                                   {"NHHC", "HWIO", "NHWC"}, {"NHWC", "HWIC", "NHWC"}, {"NHWC", "HDIO", "NHWC"},
                                   {"NHWC", "HWIO", "NHDC"}}) {
    CAPTURE(bad.lhs);
    CAPTURE(bad.rhs);
    std::string mm = error_message([&] { conv_general_dilated(x, w, {1, 1}, "SAME", {}, {}, bad); });
    CHECK(mm.find("conv_general_dilated: dimension_numbers") == 0);
    CHECK(mm.find("f32[1,5,5,3]") != std::string::npos);
    CHECK_THROWS_AS(conv_general_dilated(x, w, {1, 1}, "SAME", {}, {}, bad), ShapeError);
  }
  // Window larger than the input with VALID (and with explicit negative padding).
  m = error_message([&] { conv_general_dilated(zeros({1, 2, 2, 3}), zeros({3, 3, 3, 8}), {1, 1}, "VALID", {}, {}, dn); });
  CHECK(m.find("conv_general_dilated: window") == 0);
  CHECK(m.find("f32[1,2,2,3]") != std::string::npos);
  CHECK_THROWS_AS(conv_general_dilated(zeros({1, 2, 4, 4}), zeros({3, 2, 3, 3}), {1, 1}, Pads{{-2, 0}, {0, 0}}), ShapeError);
  CHECK_NOTHROW(conv_general_dilated(zeros({1, 2, 2, 3}), zeros({3, 3, 3, 8}), {1, 1}, "SAME", {}, {}, dn));
  // Wrong ranks, wrong parameter lengths, unknown padding.
  CHECK_THROWS_AS(conv_general_dilated(zeros({5, 3}), zeros({3, 8}), {}, "VALID"), ShapeError);
  CHECK_THROWS_AS(conv_general_dilated(zeros({1, 3, 5, 5}), zeros({8, 3, 3}), {1}, "VALID"), ShapeError);
  CHECK_THROWS_AS(conv_general_dilated(zeros({1, 3, 5, 5}), zeros({8, 3, 3, 3}), {1}, "VALID"), ShapeError);
  CHECK_THROWS_AS(conv_general_dilated(zeros({1, 3, 5, 5}), zeros({8, 3, 3, 3}), {1, 0}, "VALID"), ShapeError);
  CHECK_THROWS_AS(conv_general_dilated(zeros({1, 3, 5, 5}), zeros({8, 3, 3, 3}), {1, 1}, "FULL"), ShapeError);
  CHECK_THROWS_AS(conv_general_dilated(zeros({1, 3, 5, 5}), zeros({8, 3, 3, 3}), {1, 1}, Pads{{1, 1}}), ShapeError);
  CHECK_THROWS_AS(conv_general_dilated(zeros({1, 3, 5, 5}), zeros({8, 3, 3, 3}), {1, 1}, "VALID", {1, 1}, {0, 1}), ShapeError);
  // Integer operands: lax convolutions here are floating-point only.
  CHECK_THROWS_AS(conv_general_dilated(zeros({1, 3, 5, 5}, DType::i32), zeros({8, 3, 3, 3}, DType::i32), {1, 1}, "VALID"),
                  TypeError);
}
