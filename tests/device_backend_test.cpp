// The device kinds' seam (transforms/src/core/device_backend.hpp): every registered kind fills
// the whole interface, names itself consistently, and a kind this process has no device of
// answers every use with the DeviceError that names why; the cpu backend's memory operations
// give the values they document. Transfers, device_put and pmap exercise the seam end to end in
// array_test, pmap_test and the GPU suite.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "../transforms/src/core/array_impl.hpp"
#include "../transforms/src/core/device_backend.hpp"
#include "helpers/cpu_devices.hpp"
#include "helpers/error_message.hpp"

using namespace canopy;
using detail::backend;
using detail::DeviceBackend;

namespace {
template <class F>
bool is_set(F* f) {
  return f != nullptr;
}
}  // namespace

TEST_CASE("device backends: every device kind has a complete interface and its own names") {
  std::vector<std::string> names;
  for (Device::Kind k : detail::kDeviceKinds) {
    const DeviceBackend& b = backend(k);
    CAPTURE(std::string(b.name));
    CHECK_FALSE(b.name.empty());
    CHECK_FALSE(b.platform.empty());
    CHECK_FALSE(b.more_devices_hint.empty());
    CHECK(is_set(b.first_local_device));
    CHECK(is_set(b.local_device_count));
    CHECK(is_set(b.unavailable_reason));
    CHECK(is_set(b.allocate));
    CHECK(is_set(b.copy));
    CHECK(is_set(b.write_from_host));
    CHECK(is_set(b.read_to_host));
    CHECK(is_set(b.fill));
    CHECK(is_set(b.copy_strided));
    CHECK(is_set(b.strided_copy));
    CHECK(is_set(b.convert));
    CHECK(is_set(b.combine));
    // Graphs are for kinds with memory of their own; the CPU runs each kernel as it is called.
    CHECK(is_set(b.record) == !b.host_memory);
    CHECK(is_set(b.replay) == !b.host_memory);
    // Device names print and parse through the backend, by name and by JAX's platform name.
    CHECK(to_string(Device{k, 3}) == std::string(b.name) + ":3");
    CHECK(Device::parse(std::string(b.name) + ":2") == Device{k, 2});
    CHECK(Device::parse(b.platform) == Device{k, 0});
    Device::Kind found{};
    CHECK(detail::backend_named(b.name, &found) == &b);
    CHECK(found == k);
    for (const std::string& other : names) CHECK(other != b.name);
    names.emplace_back(b.name);
  }
  CHECK(detail::backend_named("tpu") == nullptr);
  CHECK_THROWS_AS(Device::parse("tpu:0"), DeviceError);
  // The CPU devices share host memory: arrays move between them without a copy, never to a GPU's.
  CHECK(backend(Device::Kind::cpu).host_memory);
  CHECK(detail::shares_memory(Device::cpu(0), Device::cpu(1)));
  CHECK_FALSE(detail::shares_memory(Device::cpu(0), Device::cuda(0)));
  CHECK_FALSE(detail::shares_memory(Device::cuda(0), Device::cuda(1)));
  CHECK(detail::in_device_memory(Device::cuda(0)));
}

TEST_CASE("device backends: a kind without devices answers every use with the DeviceError naming why") {
  int checked = 0;
  for (Device::Kind k : detail::kDeviceKinds) {
    const DeviceBackend& b = backend(k);
    if (b.local_device_count() > 0) continue;
    CAPTURE(std::string(b.name));
    ++checked;
    const std::string reason = b.unavailable_reason();
    CHECK_FALSE(reason.empty());
    CHECK(devices(b.name).empty());
    const float one = 1;
    const std::string msg = error_message<DeviceError>([&] { (void)array_from_data(&one, DType::f32, Shape{1}, Device{k, 0}); });
    CHECK(msg.find("array: device (" + to_string(Device{k, 0}) + ") is not available") != std::string::npos);
    CHECK(msg.find(reason) != std::string::npos);
    CHECK_THROWS_AS((void)device_put(array({1.0f, 2.0f}), Device{k, 0}), DeviceError);
    // The backend itself raises too, below the device checks of the ops.
    CHECK_THROWS_AS((void)b.allocate(16, 0), DeviceError);
  }
  // This machine has no GPU (or this build no CUDA): the cuda kind is checked here; on a GPU
  // machine every kind has devices and the GPU suite runs them.
  if (backend(Device::Kind::cuda).local_device_count() == 0) CHECK(checked >= 1);
  CHECK(backend(Device::Kind::cpu).local_device_count() >= 1);
}

TEST_CASE("device backends: a device index this process has not is a DeviceError naming its devices") {
  const int n = local_device_count();
  const std::string msg = error_message<DeviceError>([&] { (void)device_put(array({1.0f}), Device::cpu(n + 5)); });
  CHECK(msg.find("device_put: device (cpu:" + std::to_string(n + 5) + ") is not one of this process's devices (cpu:0") !=
        std::string::npos);
  CHECK(msg.find("CANOPY_CPU_DEVICES") != std::string::npos);
}

TEST_CASE("device backends: the cpu backend's memory operations") {
  const DeviceBackend& b = backend(Device::Kind::cpu);
  auto buffer = b.allocate(6 * sizeof(float), 0);
  REQUIRE(buffer);
  auto* data = static_cast<float*>(buffer->data());
  const std::array<float, 6> values{1, 2, 3, 4, 5, 6};
  b.write_from_host(values.data(), data, sizeof values, 0);
  std::array<float, 6> back{};
  b.read_to_host(data, back.data(), sizeof back, 0);
  CHECK(back == values);

  SUBCASE("copy, fill") {
    std::array<float, 6> other{};
    b.copy(data + 2, 0, other.data(), 1, 3 * sizeof(float));
    CHECK(other == std::array<float, 6>{3, 4, 5, 0, 0, 0});
    const float seven = 7;
    b.fill(sizeof seven, &seven, other.data() + 1, 4, 0);
    CHECK(other == std::array<float, 6>{3, 7, 7, 7, 7, 0});
  }
  SUBCASE("strided copies: a transpose, a reversal into every other element") {
    std::array<float, 6> t{};
    const std::array<std::int64_t, 2> transposed{1, 3};  // (3, 2) read from the (2, 3) data
    b.strided_copy(sizeof(float), data, transposed, Shape{3, 2}, t.data(), 0);
    CHECK(t == std::array<float, 6>{1, 4, 2, 5, 3, 6});
    std::array<float, 6> r{};
    const std::array<std::int64_t, 1> reversed{-1}, every_other{2};
    b.copy_strided(sizeof(float), data + 2, reversed, Shape{3}, r.data(), every_other, 0);
    CHECK(r == std::array<float, 6>{3, 0, 2, 0, 1, 0});
  }
  SUBCASE("convert and combine: what the collectives of devices with memory of their own compute") {
    std::array<double, 6> wide{};
    b.convert(DType::f32, DType::f64, data, wide.data(), 6, 0);
    CHECK(wide == std::array<double, 6>{1, 2, 3, 4, 5, 6});
    std::array<float, 6> sum{};
    b.combine(kernels::BinaryOp::add, DType::f32, data, data, sum.data(), 6, 0);
    CHECK(sum == std::array<float, 6>{2, 4, 6, 8, 10, 12});
    b.combine(kernels::BinaryOp::max, DType::f32, data, values.data() + 0, sum.data(), 3, 0);
    CHECK(sum == std::array<float, 6>{1, 2, 3, 8, 10, 12});
  }
}

TEST_CASE("device backends: copy_bytes, fill and strided copies on arrays of two CPU devices") {
  CpuDevices two(2);
  const Array x = device_put(array({1.0f, 2.0f, 3.0f, 4.0f}), Device::cpu(0));
  // Host memory is shared: a move between CPU devices keeps the buffer.
  const Array moved = detail::to_device_memory(x, Device::cpu(1), true);
  CHECK(moved.impl()->buffer == x.impl()->buffer);
  CHECK(moved.device() == Device::cpu(1));
  Array out = detail::make_concrete(x.aval(), Device::cpu(1), "test", true);
  detail::copy_bytes(out, 0, x, 2 * sizeof(float), 2 * sizeof(float));
  const float nine = 9;
  detail::fill(out, sizeof nine, &nine, 0);
  detail::copy_bytes(out, 2 * sizeof(float), x, 0, 2 * sizeof(float));
  CHECK(out.to_vector<float>() == std::vector<float>{3, 4, 1, 2});
  detail::fill(out, sizeof nine, &nine, 3);
  CHECK(out.to_vector<float>() == std::vector<float>{9, 9, 9, 2});
  const std::array<std::int64_t, 1> reversed{-1};
  detail::strided_copy(out, sizeof(float), static_cast<const float*>(detail::cdata(x)) + 3, reversed, Shape{4});
  CHECK(out.to_vector<float>() == std::vector<float>{4, 3, 2, 1});
}
