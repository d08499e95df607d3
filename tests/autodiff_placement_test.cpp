// Where reverse mode puts the zeros it makes: the gradient of an input is a value like that input,
// on its device and committed as it is (jax instantiates a symbolic zero against the input), and a
// transpose rule's all-zero cotangent stays beside the cotangent it came from. Two virtual CPU
// devices stand in for a GPU here; the GPU suite's registry walk checks cuda:0.
#include <doctest/doctest.h>

#include <vector>

#include <canopy/canopy.hpp>

#include "../transforms/src/core/array_impl.hpp"
#include "helpers/cpu_devices.hpp"

using namespace canopy;

namespace {

bool committed(const Array& x) { return x.impl()->committed; }

}  // namespace

TEST_CASE("vjp: an input no cotangent reaches gets its zero gradient on its own device, committed as it is") {
  CpuDevices devices(2);
  const Device cpu1 = Device::cpu(1);
  const Array x = device_put(array({1.5f, -2.0f}), cpu1);
  // Only an integer leaves the function, and its cotangent is on cpu:0: x's gradient, all zeros,
  // is made where x is.
  auto [out, pullback] =
      detail::vjp_flat([](const Arrays& v) { return Arrays{convert_element_type(v[0], DType::i32)}; }, {x});
  const Arrays g = pullback({zeros({2}, DType::i32)});
  CHECK(g[0].device() == cpu1);
  CHECK(committed(g[0]));
  CHECK(g[0].dtype() == DType::f32);
  CHECK(g[0].to_vector<float>() == std::vector<float>{0.0f, 0.0f});

  // An unused input on cpu:1 beside a used one on the default device; an uncommitted unused input
  // stays uncommitted on the default device.
  const Array y = device_put(array({3.0f}), cpu1), z = array({4.0f});
  const auto [gx, gy, gz] = grad([](const Array& a, const Array&, const Array&) { return sum(a * a); },
                                 argnums<0, 1, 2>)(array({1.0f, 2.0f}), y, z);
  CHECK(gx.to_vector<float>() == std::vector<float>{2.0f, 4.0f});
  CHECK(gy.device() == cpu1);
  CHECK(committed(gy));
  CHECK(gz.device() == default_device());
  CHECK_FALSE(committed(gz));
}

TEST_CASE("grad: the zero cotangents of an empty convolution's filter and of an empty slice stay on the operands' device") {
  CpuDevices devices(2);
  const Device cpu1 = Device::cpu(1);
  const ConvDimensionNumbers nchw{"NCHW", "OIHW", "NCHW"};
  const Array lhs = device_put(zeros({0, 2, 5, 5}), cpu1), rhs = device_put(ones({3, 2, 3, 3}), cpu1);
  const auto [glhs, grhs] = grad(
      [&](const Array& l, const Array& r) { return sum(conv_general_dilated(l, r, {1, 1}, "SAME", {}, {}, nchw)); },
      argnums<0, 1>)(lhs, rhs);
  CHECK(glhs.shape() == lhs.shape());
  CHECK(grhs.shape() == rhs.shape());
  CHECK(grhs.device() == cpu1);
  CHECK(committed(grhs));
  CHECK(sum(abs(grhs)).item<float>() == 0.0f);

  const Array x = device_put(array({1.0f, 2.0f, 3.0f}), cpu1);
  const Array gs = grad([](const Array& a) { return sum(slice(a, {1}, {1})); })(x);
  CHECK(gs.device() == cpu1);
  CHECK(committed(gs));
  CHECK(gs.to_vector<float>() == std::vector<float>{0.0f, 0.0f, 0.0f});
}

TEST_CASE("jvp: a missing tangent is a zero like its primal, so a sum's tangent lands where the sum does") {
  CpuDevices devices(2);
  const Device cpu1 = Device::cpu(1);
  const Array x = array({1.0f, 2.0f}), y = device_put(array({3.0f, 4.0f}), cpu1);
  const auto [out, tangents] =
      detail::jvp_flat([](const Arrays& v) { return Arrays{v[0] + v[1]}; }, {x, y}, {ones({2}), Array()});
  CHECK(out[0].device() == cpu1);
  CHECK(tangents[0].device() == cpu1);
  CHECK(committed(tangents[0]));
  CHECK(tangents[0].to_vector<float>() == std::vector<float>{1.0f, 1.0f});
}
