// GPU verification's comparison (transforms/src/devices/verify_against_cpu.cpp), checked on the host by
// handing it results that stand for a GPU kernel's: the CPU kernel's own pass, sums added in
// another order pass, and a result beyond the documented tolerance raises DeviceMismatchError
// naming the primitive, the output, the index and both values. On a GPU the suite runs it for real
// (tests/gpu/registry_test.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/core/primitive.hpp>
#include <canopy/core/registry.hpp>

#include "../transforms/src/devices/verify_against_cpu.hpp"

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
