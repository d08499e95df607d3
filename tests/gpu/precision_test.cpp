// On a GPU: f32 matmuls and convolutions at Precision::highest (exact f32) and Precision::high
// (TF32 tensor cores) against the CPU's exact result, each held to its own bound: a product's
// error is at most a multiple of its unit roundoff times the sum of its terms' magnitudes,
// which the same computation on |operands| gives. Matmuls on cuBLASLt's timed algorithm and on
// its heuristic's first alike.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/kernels/cuda.hpp>

#include "gpu_check.hpp"

using namespace canopy;
using gpu_test::kGpu;

namespace {

/// Each element of `got` (GPU) within `unit` * terms^0.5 * 4 * magnitude + 2^-24 * |want| of `want`
/// (CPU), where `magnitude` is the computation on the operands' absolute values and `terms` the
/// number of products summed per element. Returns the largest error relative to the bound's scale.
double check_within(const Array& got, const Array& want, const Array& magnitude, double terms, double unit,
                    const std::string& what) {
  CAPTURE(what);
  REQUIRE(to_string(got.aval()) == to_string(want.aval()));
  CHECK(got.device() == kGpu);
  const auto g = got.astype(DType::f64).to_vector<double>(), w = want.astype(DType::f64).to_vector<double>(),
             m = magnitude.astype(DType::f64).to_vector<double>();
  double worst = 0;
  for (std::size_t e = 0; e < g.size(); ++e) {
    const double bound = 4 * unit * std::sqrt(terms) * m[e] + 0x1p-24 * std::abs(w[e]);
    const double err = std::abs(g[e] - w[e]);
    if (m[e] > 0) worst = std::max(worst, err / m[e]);
    if (err <= bound) continue;
    CAPTURE(e);
    CAPTURE(bound);
    CHECK(g[e] == w[e]);
  }
  return worst;
}

constexpr double kF32 = 0x1p-24;   // f32's unit roundoff: exact products, f32 sums
constexpr double kTf32 = 0x1p-10;  // TF32 (10-bit mantissas): each product off by up to ~2^-10

}  // namespace

TEST_CASE("precision on cuda:0: f32 matmuls at highest are exact f32, at high within TF32's rounding, both against the CPU") {
  const Array a = random::uniform(random::key(1), {192, 384}, DType::f32, -1.0f, 1.0f);
  const Array b = random::uniform(random::key(2), {384, 160}, DType::f32, -1.0f, 1.0f);
  const Array bias = random::uniform(random::key(3), {160}, DType::f32, -1.0f, 1.0f);
  const Array want = matmul(a, b), magnitude = matmul(abs(a), abs(b));
  const Array ga = device_put(a, kGpu), gb = device_put(b, kGpu), gbias = device_put(bias, kGpu);
  for (Precision p : {Precision::highest, Precision::high, Precision::default_}) {
    const std::string_view precision = to_string(p);
    CAPTURE(precision);
    const double unit = p == Precision::high ? kTf32 : kF32;
    const double eager = check_within(matmul(ga, gb, p), want, magnitude, 384, unit, "eager matmul");
    MESSAGE(to_string(p) << ": largest error / magnitude " << eager);
    // The default's opt-in spelling, and jit's matmul + bias row (one cuBLASLt call at `p`).
    DefaultMatmulPrecision scope(p);
    auto layer = jit([](const Array& x, const Array& w, const Array& c) { return matmul(x, w) + c; });
    check_within(layer(ga, gb, gbias), want + bias, magnitude + abs(bias), 385, unit, "jitted matmul + bias");
  }
}

TEST_CASE("precision on cuda:0: matmuls on cuBLASLt's timed algorithm and on the heuristic's first are exact f32") {
  // A product of a GFLOP (timed where autotuning is on), a training step's shape, an odd one
  // (unaligned rows) and a batch (smaller products take the heuristic's first either way); each
  // shape is planned once per setting, so each setting gets shapes of its own.
  const bool was = kernels::cuda::cublaslt_autotune();
  for (bool timed : {true, false}) {
    CAPTURE(timed);
    kernels::cuda::set_cublaslt_autotune(timed);
    const std::int64_t odd = timed ? 33 : 35;
    const std::int64_t big = timed ? 1024 : 1023;
    const std::vector<Shape> lhs{{1024, big}, {128, timed ? 784 : 783}, {odd, 129}, {3, 64, odd}};
    const std::vector<Shape> rhs{{big, 512}, {timed ? 784 : 783, 512}, {129, odd + 4}, {3, odd, 96}};
    for (std::size_t k = 0; k < lhs.size(); ++k) {
      CAPTURE(k);
      const Array a = random::uniform(random::key(11 + static_cast<std::uint32_t>(k)), lhs[k], DType::f32, -1.0f, 1.0f);
      const Array b = random::uniform(random::key(21 + static_cast<std::uint32_t>(k)), rhs[k], DType::f32, -1.0f, 1.0f);
      const double terms = static_cast<double>(lhs[k].back());
      check_within(matmul(device_put(a, kGpu), device_put(b, kGpu)), matmul(a, b), matmul(abs(a), abs(b)), terms, kF32,
                   "f32 product");
      // bf16 operands, f32 accumulation: the CPU's product of the same bf16 values, rounded to bf16.
      const Array ha = a.astype(DType::bf16), hb = b.astype(DType::bf16);
      gpu_test::check_close(matmul(device_put(ha, kGpu), device_put(hb, kGpu)), matmul(ha, hb), "bf16 product");
    }
  }
  kernels::cuda::set_cublaslt_autotune(was);
}

TEST_CASE("precision on cuda:0: f32 convolutions at highest and high, and their gradients' precision, against the CPU") {
  const Array x = random::uniform(random::key(4), {8, 16, 16, 32}, DType::f32, -1.0f, 1.0f);
  const Array w = random::uniform(random::key(5), {3, 3, 32, 64}, DType::f32, -1.0f, 1.0f);
  const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"};
  auto conv = [&](const Array& l, const Array& r, Precision p) {
    return conv_general_dilated(l, r, {1, 1}, "SAME", {}, {}, nhwc, 1, p);
  };
  const Array want = conv(x, w, Precision::highest), magnitude = conv(abs(x), abs(w), Precision::highest);
  const Array gx = device_put(x, kGpu), gw = device_put(w, kGpu);
  for (Precision p : {Precision::highest, Precision::high}) {
    const std::string_view precision = to_string(p);
    CAPTURE(precision);
    const double unit = p == Precision::high ? kTf32 : kF32;
    const double worst = check_within(conv(gx, gw, p), want, magnitude, 3 * 3 * 32, unit, "forward convolution");
    MESSAGE(to_string(p) << ": largest error / magnitude " << worst);
    // The filter gradient: x convolved with the cotangent (all ones here), so its magnitude is the
    // same computation on |x|; it runs at the forward's precision.
    auto grad_w = [&](const Array& l, const Array& r) {
      return grad([&](const Array& k) { return sum(conv(l, k, p)); })(r);
    };
    const Array gw_want = grad_w(x, w), gw_magnitude = grad_w(abs(x), w);
    check_within(grad_w(gx, gw), gw_want, gw_magnitude, 8 * 16 * 16, unit, "filter gradient");
  }
}
