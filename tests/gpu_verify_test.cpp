// GPU verification's comparison (transforms/src/devices/verify_against_cpu.cpp), checked on the host by
// handing it results that stand for a GPU kernel's: the CPU kernel's own pass, sums added in
// another order pass, and a result beyond the documented tolerance raises DeviceMismatchError
// naming the primitive, the output, the index and both values; then its tolerance for sums. On a
// GPU the suite runs it for real (tests/gpu/registry_test.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/core/primitive.hpp>
#include <canopy/core/registry.hpp>
#include <canopy/random.hpp>

#include "../transforms/src/devices/verify_against_cpu.hpp"
#include "../transforms/src/jit/passes/pipeline.hpp"
#include "../transforms/src/primitives/linalg/matmul_shape.hpp"

using namespace canopy;

namespace {

const ErasedSample& first_sample(const PrimitiveInfo& p, const std::vector<ErasedSample>& samples, DType d) {
  for (const ErasedSample& s : samples)
    if (!s.inputs.empty() && s.inputs[0].dtype() == d && s.inputs[0].size() >= 6) return s;
  FAIL("no sample (of 6 elements or more) of ", std::string(p.name), " in ", name(d));
  return samples.front();
}

/// y with element `at` (flat) multiplied by `factor`, or shifted by `shift`.
Array changed(const Array& y, std::size_t at, double factor, double shift = 0) {
  std::vector<double> v = y.astype(DType::f64).to_vector<double>();
  v[at] = v[at] * factor + shift;
  return array(v, y.shape()).astype(y.dtype());
}

std::string mismatch_text(const PrimitiveInfo& p, const ErasedSample& s, const Arrays& out) {
  try {
    detail::verify_against_cpu(p, s.inputs, out, s.ref());
  } catch (const DeviceMismatchError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("GPU verification: the CPU kernel's results pass; one element off raises DeviceMismatchError naming it") {
  const PrimitiveInfo& exp_p = *find_primitive("exp");
  const auto samples = exp_p.samples();
  const ErasedSample& s = first_sample(exp_p, samples, DType::f32);
  const Arrays want = detail::bind(exp_p, s.inputs, s.ref());
  CHECK(mismatch_text(exp_p, s, want).empty());
  CHECK(mismatch_text(exp_p, s, {changed(want[0], 1, 1 + 1e-6)}).empty());  // within 2e-6 relative
  const std::string text = mismatch_text(exp_p, s, {changed(want[0], 1, 1 + 1e-3)});
  CAPTURE(text);
  CHECK(text.find("exp: GPU result (output 0 " + to_string(want[0].aval()) + " at [0, 1])") == 0);
  CHECK(text.find("where the CPU kernel gives") != std::string::npos);
  CHECK(text.find("tolerance") != std::string::npos);
  CHECK(text.find("operands (" + to_string(s.inputs[0].aval()) + ")") != std::string::npos);

  // NaN matches NaN, and a NaN where the CPU has a number does not.
  const Array nan_in = array({-1.0f, 2.0f});
  const PrimitiveInfo& log_p = *find_primitive("log");
  const auto log_samples = log_p.samples();
  const ErasedSample& l = first_sample(log_p, log_samples, DType::f32);
  const ErasedSample nan_sample{{nan_in}, l.params, l.type, "log of -1"};
  CHECK(mismatch_text(log_p, nan_sample, {log(nan_in)}).empty());
  CHECK_FALSE(mismatch_text(log_p, nan_sample, {array({std::nanf(""), std::nanf("")})}).empty());

  // Infinities are exact: a finite number, or the other infinity, where the CPU overflows to inf.
  const Array overflow = array({100.0f, 1.0f});
  const ErasedSample inf_sample{{overflow}, s.params, s.type, "exp of 100"};
  const float inf = std::numeric_limits<float>::infinity(), e = exp(overflow).to_vector<float>()[1];
  CHECK(mismatch_text(exp_p, inf_sample, {array({inf, e})}).empty());
  const std::string inf_text = mismatch_text(exp_p, inf_sample, {array({3e38f, e})});
  CAPTURE(inf_text);
  CHECK(inf_text.find("(NaN and infinities are exact)") != std::string::npos);
  CHECK_FALSE(mismatch_text(exp_p, inf_sample, {array({-inf, e})}).empty());
}

TEST_CASE("GPU verification: integer results are exact; sums and convolutions are held to their terms' magnitude") {
  const PrimitiveInfo& add_p = *find_primitive("add");
  const auto add_samples = add_p.samples();
  const ErasedSample& ints = first_sample(add_p, add_samples, DType::i32);
  const Array sum_i = detail::bind(add_p, ints.inputs, ints.ref())[0];
  const std::string text = mismatch_text(add_p, ints, {changed(sum_i, 0, 1, 1)});
  CAPTURE(text);
  CHECK(text.find("(results of this dtype are exact)") != std::string::npos);

  // A convolution summed in f64 and rounded once is not the CPU's f32 sum, and passes; an error of
  // a whole term does not.
  const PrimitiveInfo& conv_p = *find_primitive("conv_general_dilated");
  const auto conv_samples = conv_p.samples();
  const ErasedSample& c = first_sample(conv_p, conv_samples, DType::f32);
  Arrays in64;
  for (const Array& x : c.inputs) in64.push_back(x.astype(DType::f64));
  const Array exact = detail::bind(conv_p, in64, c.ref())[0].astype(DType::f32);
  const Array cpu = detail::bind(conv_p, c.inputs, c.ref())[0];
  CHECK(mismatch_text(conv_p, c, {exact}).empty());
  const double term = std::abs(c.inputs[0].reshape({-1}).to_vector<float>()[0] * c.inputs[1].reshape({-1}).to_vector<float>()[0]);
  CHECK_FALSE(mismatch_text(conv_p, c, {changed(cpu, 0, 1, term > 1e-3 ? term : 1e-3)}).empty());
}

namespace {

/// x with each f32 element's mantissa cut to TF32's 10 bits (toward zero: the worst a tensor core's
/// conversion does).
Array truncated_to_tf32(const Array& x) {
  std::vector<float> v = x.to_vector<float>();
  for (float& f : v) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    bits &= ~((1u << 13) - 1);
    std::memcpy(&f, &bits, sizeof bits);
  }
  return array(v, x.shape());
}

ErasedSample dot_at(const Array& a, const Array& b, Precision precision) {
  DotDimensionNumbers dims;
  dims.lhs_contracting = {1};
  dims.rhs_contracting = {0};
  auto params = std::make_shared<detail::DotGeneralParams>(detail::DotGeneralParams{dims, std::pair{precision, precision}});
  return {{a, b}, params, &typeid(detail::DotGeneralParams), "f32 matmul"};
}

}  // namespace

TEST_CASE("GPU verification: f32 products at Precision::high are held to TF32's rounding, the others to f32's") {
  const PrimitiveInfo& dot_p = *find_primitive("dot_general");
  const Array a = random::normal(random::PRNGKey(1), {8, 64}, DType::f32);
  const Array b = random::normal(random::PRNGKey(2), {64, 5}, DType::f32);
  // What a TF32 tensor core computes: the truncated operands' exact products, summed in f32.
  const Array tf32 = matmul(truncated_to_tf32(a), truncated_to_tf32(b), Precision::highest);
  CHECK(mismatch_text(dot_p, dot_at(a, b, Precision::high), {tf32}).empty());
  const std::string exact = mismatch_text(dot_p, dot_at(a, b, Precision::highest), {tf32});
  CAPTURE(exact);
  CHECK(exact.find("tolerance") != std::string::npos);
  CHECK_FALSE(mismatch_text(dot_p, dot_at(a, b, Precision::default_), {tf32}).empty());
  // TF32's allowance is a fraction of the terms' magnitude, not a license: a result off by one
  // unit (the sum of 64 products of magnitude ~0.64 is ~41) still raises at `high`.
  CHECK_FALSE(mismatch_text(dot_p, dot_at(a, b, Precision::high), {changed(tf32, 3, 1, 1.0)}).empty());
}

TEST_CASE("GPU verification: off by default, set for a scope, and restored after it") {
  CHECK_FALSE(gpu_verify());  // CANOPY_GPU_VERIFY is not set for the suite
  {
    GpuVerifyScope on;
    CHECK(gpu_verify());
    {
      GpuVerifyScope off(false);
      CHECK_FALSE(gpu_verify());
    }
    CHECK(gpu_verify());
  }
  CHECK_FALSE(gpu_verify());
  // Host arrays never meet it: the CPU's own kernels are the reference.
  GpuVerifyScope on;
  const std::int64_t before = detail::gpu_verified_kernels();
  (void)(ones({3}) + 1.0f);
  CHECK(detail::gpu_verified_kernels() == before);
}

// GPU verification's tolerance for sums (detail::summation_tolerance), checked on the host: f32
// sums of the same terms in the orders a CPU and a GPU use stay inside it, at the lengths of a CNN's
// filter gradients, while a wrong tap, and TF32 products in a forward convolution's short sums, go
// beyond it; and a fused matmul or convolution with its bias is allowed the one rounding in
// 16-bit dtypes that the CPU's two steps make beyond the GPU's single one.

namespace {

/// GPU verification's tolerance for an f32 sum of k terms of total magnitude m.
double f32_tolerance(std::int64_t k, double m) {
  return detail::summation_tolerance(static_cast<double>(k), m, detail::accumulator_eps(DType::f32));
}

/// The orders of summation compared: one accumulator with fused multiply-adds (a CPU's loop, or
/// one GPU thread's whole reduction); separate products summed backwards; a pairwise tree; 256
/// strided accumulators (a thread block) reduced by a tree; split-K chunks of 128 added in turn.
std::vector<float> sums_in_orders(std::span<const float> x, std::span<const float> d) {
  const std::size_t k = x.size();
  std::vector<float> products(k);
  for (std::size_t i = 0; i < k; ++i) products[i] = x[i] * d[i];
  std::function<float(std::size_t, std::size_t)> pairwise = [&](std::size_t lo, std::size_t hi) {
    if (hi - lo <= 8) {
      float s = 0;
      for (std::size_t i = lo; i < hi; ++i) s += products[i];
      return s;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    return pairwise(lo, mid) + pairwise(mid, hi);
  };
  float fused = 0, backwards = 0, chunked = 0;
  for (std::size_t i = 0; i < k; ++i) fused = std::fma(x[i], d[i], fused);
  for (std::size_t i = k; i-- > 0;) backwards += products[i];
  std::vector<float> lanes(256, 0.0f);
  for (std::size_t i = 0; i < k; ++i) lanes[i % 256] = std::fma(x[i], d[i], lanes[i % 256]);
  for (std::size_t width = 128; width > 0; width /= 2)
    for (std::size_t i = 0; i < width; ++i) lanes[i] += lanes[i + width];
  for (std::size_t c = 0; c < k; c += 128) {
    float s = 0;
    for (std::size_t i = c; i < std::min(k, c + 128); ++i) s = std::fma(x[i], d[i], s);
    chunked += s;
  }
  return {fused, backwards, pairwise(0, k), lanes[0], chunked};
}

std::vector<float> values(std::uint32_t seed, std::int64_t n) {
  return random::normal(random::key(seed), {n}).to_vector<float>();
}

/// x rounded to TF32 (10 mantissa bits, to nearest), as a tensor core reads an f32 operand.
float tf32(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits = (bits + 0x1000u) & ~0x1fffu;
  std::memcpy(&x, &bits, sizeof bits);
  return x;
}

}  // namespace

TEST_CASE("GPU verification: a filter gradient's long f32 sums stay inside the tolerance in any order; a wrong tap does not") {
  // As a CNN's filter gradient sums them: 128 x 14 x 14 products of an activation (a relu's
  // output, >= 0) and an output gradient, both of random size; the gradients of random sign, or
  // all of one sign (the worst case for a long accumulation: the partial sums only grow).
  const std::int64_t k = 128 * 14 * 14, elements = 24;
  for (const bool one_sign : {false, true}) {
    CAPTURE(one_sign);
    int wrong_tap_caught = 0;
    for (std::int64_t e = 0; e < elements; ++e) {
      std::vector<float> x = values(static_cast<std::uint32_t>(2 * e + 1), k + 1), d = values(static_cast<std::uint32_t>(2 * e + 2), k);
      for (float& v : x) v = std::max(v, 0.0f);
      if (one_sign)
        for (float& v : d) v = std::abs(v);
      double exact = 0, magnitude = 0;  // products of two floats are exact in f64
      for (std::int64_t i = 0; i < k; ++i) {
        exact += static_cast<double>(x[i]) * d[i];
        magnitude += std::abs(static_cast<double>(x[i]) * d[i]);
      }
      const double tol = f32_tolerance(k, magnitude);
      // Each order within half the tolerance of the exact sum: any two within all of it.
      for (const float s : sums_in_orders(std::span(x).first(k), d)) CHECK(std::abs(s - exact) <= tol / 2);
      // The same sum with the activations one position off (a wrong tap or stride).
      float shifted = 0;
      for (std::int64_t i = 0; i < k; ++i) shifted = std::fma(x[i + 1], d[i], shifted);
      wrong_tap_caught += std::abs(shifted - exact) > tol;
    }
    // The shifted sum is another sum of such terms: it differs by about sqrt(k) terms' size,
    // 30 to 50 times the tolerance, so only an element that happens to nearly agree (a few per
    // cent) passes.
    CHECK(wrong_tap_caught >= elements * 9 / 10);
  }
}

TEST_CASE("GPU verification: TF32 products in a forward convolution's sums of 288 terms go beyond the f32 tolerance") {
  // conv 32 -> 64 channels, 3 x 3: each output sums 288 products of activations and weights of
  // random sign. Verification raises at the first element beyond: most are.
  const std::int64_t k = 3 * 3 * 32, elements = 256;
  int caught = 0;
  for (std::int64_t e = 0; e < elements; ++e) {
    const std::vector<float> x = values(static_cast<std::uint32_t>(1000 + 2 * e), k),
                             w = values(static_cast<std::uint32_t>(1001 + 2 * e), k);
    double exact = 0, magnitude = 0;
    float on_tensor_cores = 0;
    for (std::int64_t i = 0; i < k; ++i) {
      exact += static_cast<double>(x[i]) * w[i];
      magnitude += std::abs(static_cast<double>(x[i]) * w[i]);
      on_tensor_cores = std::fma(tf32(x[i]), tf32(w[i]), on_tensor_cores);
    }
    caught += std::abs(on_tensor_cores - exact) > f32_tolerance(k, magnitude);
  }
  CAPTURE(caught);
  CHECK(caught >= elements / 4);
}

namespace {

/// The one `name` equation jit's GPU passes make of f at args, bound to args (its operands are the
/// program's inputs), and verified against the CPU with `gpu` as its GPU result.
std::string verify_fused(const std::function<Array(const Array&, const Array&, const Array&)>& f, const Arrays& args,
                         std::string_view pass, std::string_view name, const Array& gpu) {
  Program p = jit(f).lower(args[0], args[1], args[2]).program();
  detail::pass_named(pass).run(p);
  const Eqn* fused = nullptr;
  for (const Eqn& e : p.eqns)
    if (e.prim->name == name) fused = &e;
  REQUIRE(fused != nullptr);
  Arrays in;
  for (const Atom& a : fused->in) {
    REQUIRE(a.is_var());
    for (std::size_t i = 0; i < p.in_vars.size(); ++i)
      if (p.in_vars[i] == a.index) in.push_back(args[i]);
  }
  REQUIRE(in.size() == fused->in.size());
  CHECK(fused->prim->rounds_intermediate);
  const Shape shape = f(args[0], args[1], args[2]).shape();
  try {
    const Arrays out = {gpu.reshape(shape)};
    detail::verify_against_cpu(*fused->prim, in, out, fused->params_ref());
  } catch (const DeviceMismatchError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("GPU verification: a bf16 matmul or convolution with its bias may round once where the CPU rounds twice") {
  // The product is 1 + 2^-8 in f32 and the bias -1: the GPU adds them in f32 and rounds 2^-8 once;
  // the CPU rounds the product to bf16 first (a tie: to 1) and gives 0. Half an ulp of the
  // product is allowed; four times the difference is not.
  const float third = 0x1p-9f;
  const Array b = array({-1.0f}).astype(DType::bf16);
  const Array once = array({0x1p-8f}).astype(DType::bf16), wrong = array({0x1p-6f}).astype(DType::bf16);
  SUBCASE("dot_general_bias") {
    const Array x = ones({1, 3}, DType::bf16), w = array({1.0f, third, third}).reshape({3, 1}).astype(DType::bf16);
    auto f = [](const Array& x, const Array& w, const Array& b) { return matmul(x, w) + b; };
    CHECK(f(x, w, b).astype(DType::f32).to_vector<float>() == std::vector<float>{0.0f});
    CHECK(verify_fused(f, {x, w, b}, "fuse_epilogues_for_cuda", "dot_general_bias", once).empty());
    CHECK_FALSE(verify_fused(f, {x, w, b}, "fuse_epilogues_for_cuda", "dot_general_bias", wrong).empty());
  }
  SUBCASE("conv_general_dilated_bias") {
    const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"};
    const Array x = ones({1, 3, 3, 1}, DType::bf16);
    const Array w = array({1.0f, third, third, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}).reshape({3, 3, 1, 1}).astype(DType::bf16);
    auto f = [&](const Array& x, const Array& w, const Array& b) {
      return conv_general_dilated(x, w, {1, 1}, "VALID", {}, {}, nhwc) + b;
    };
    CHECK(f(x, w, b).astype(DType::f32).to_vector<float>() == std::vector<float>{0.0f});
    CHECK(verify_fused(f, {x, w, b}, "fuse_conv_bias_for_cuda", "conv_general_dilated_bias", once).empty());
    CHECK_FALSE(verify_fused(f, {x, w, b}, "fuse_conv_bias_for_cuda", "conv_general_dilated_bias", wrong).empty());
  }
}

TEST_CASE("GPU verification: a convolution's element whose own products are zero may carry a transform's rounding "
          "of the largest sum where cuDNN ran it") {
  // Rows 0-2 of the image are zeros: output row 0 has no nonzero product (its own bound is the
  // floor rtol * largest / 16), the others sum 9 products of up to 10 each. A Winograd or FFT
  // engine puts a fraction of an ulp of the tile's sums there; verification allows 16 units of
  // roundoff of the largest sum of magnitudes (about 1e-5 here) where such an engine may have run
  // (cuDNN ran the call), and holds a call summed term by term to the floor; 100 units fail
  // either way.
  const ConvDimensionNumbers nchw{"NCHW", "OIHW", "NCHW"};
  std::vector<float> image(25, 0.0f);
  for (std::size_t i = 15; i < 25; ++i) image[i] = static_cast<float>(i) / 2.5f;
  const Array x = array(image, Shape{1, 1, 5, 5}), w = ones({1, 1, 3, 3});
  auto f = [&](const Array& x, const Array& w) { return conv_general_dilated(x, w, {1, 1}, "VALID", {}, {}, nchw); };
  const Program p = jit(f).lower(x, w).program();
  const Eqn* conv = nullptr;
  for (const Eqn& e : p.eqns)
    if (e.prim->name == "conv_general_dilated") conv = &e;
  REQUIRE(conv != nullptr);
  CHECK(conv->prim->fast_transform_sums);
  const Array cpu = f(x, w);
  const std::vector<float> sums = f(abs(x), abs(w)).to_vector<float>();
  const double largest_sum = *std::max_element(sums.begin(), sums.end()), unit = 0x1p-24 * largest_sum;
  // summed_by_transform: as given, or (unset) as the call says (here on the host: no cuDNN ran).
  auto text = [&](double units, std::optional<bool> summed_by_transform) {
    const Arrays out = {changed(cpu, 1, 1, units * unit)};
    try {
      if (summed_by_transform) detail::verify_against_cpu(*conv->prim, Arrays{x, w}, out, conv->params_ref(), *summed_by_transform);
      else detail::verify_against_cpu(*conv->prim, Arrays{x, w}, out, conv->params_ref());
    } catch (const DeviceMismatchError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(cpu.to_vector<float>()[1] == 0.0f);
  CHECK(text(4, true).empty());
  CHECK_FALSE(text(4, false).empty());
  CHECK_FALSE(text(4, std::nullopt).empty());
  CHECK_FALSE(text(100, true).empty());
  // jit's convolution + bias for the GPU may be summed so too.
  auto layer = [&](const Array& x, const Array& w, const Array& b) { return f(x, w) + b.reshape({1, 1, 1}); };
  Program fused = jit(layer).lower(x, w, ones({1})).program();
  detail::pass_named("fuse_conv_bias_for_cuda").run(fused);
  int with_bias = 0;
  for (const Eqn& e : fused.eqns)
    if (e.prim->name == "conv_general_dilated_bias") {
      ++with_bias;
      CHECK(e.prim->fast_transform_sums);
    }
  CHECK(with_bias == 1);
}
