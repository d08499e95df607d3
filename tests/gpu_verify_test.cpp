// GPU verification's comparison (transforms/src/devices/verify_against_cpu.cpp), checked on the host by
// handing it results that stand for a GPU kernel's: the CPU kernel's own pass, sums added in
// another order pass, and a result beyond the documented tolerance raises DeviceMismatchError
// naming the primitive, the output, the index and both values. On a GPU the suite runs it for real
// (tests/gpu/registry_test.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/core/primitive.hpp>
#include <canopy/core/registry.hpp>

#include "../transforms/src/devices/verify_against_cpu.hpp"
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
