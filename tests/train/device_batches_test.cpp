// A data set held on a device (train/device_batches.hpp): the same batches, in the same order, as
// the host's batches() for the same key, on cpu:0 and on another CPU device (a GPU's run in the
// GPU suite is the same code with its kernels).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

#include "../helpers/error_message.hpp"
#include "counting_data.hpp"

namespace {

using namespace canopy;

using test::counting_data;
using test::Example;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// Every batch of the device epoch equals the host's batch at the same index, leaf by leaf, bit for bit.
void check_same_batches(const Example& data, const DeviceDataset<Example>& on_device, std::int64_t batch_size,
                        const std::optional<Array>& key, bool drop_last) {
  auto host = batches(data, batch_size, key, {.drop_last = drop_last});
  auto device = on_device.epoch(batch_size, key, {.drop_last = drop_last});
  REQUIRE(device.size() == host.size());
  CHECK(device.num_examples() == host.num_examples());
  std::int64_t i = 0;
  for (const Example& b : device) {
    CAPTURE(i);
    const Example h = host[i++];
    CHECK(b.x.device() == on_device.device());
    CHECK(b.y.device() == on_device.device());
    CHECK(b.x.dtype() == DType::f32);
    CHECK(b.y.dtype() == DType::i32);
    CHECK(b.x.shape() == h.x.shape());
    CHECK(b.y.shape() == h.y.shape());
    CHECK(b.tag == 7);
    CHECK(b.x.to_vector<float>() == h.x.to_vector<float>());
    CHECK(b.y.to_vector<std::int32_t>() == h.y.to_vector<std::int32_t>());
  }
  CHECK(i == host.size());
}

}  // namespace

TEST_CASE("device data: a shuffled epoch on cpu:0 and cpu:1 gives the host's batches for the same key") {
  const int previous = local_device_count();
  set_cpu_device_count(2);
  const Example d = counting_data(103);
  for (Device device : {Device::cpu(0), Device::cpu(1)}) {
    const std::string where = to_string(device);
    CAPTURE(where);
    const DeviceDataset<Example> on_device(d, device);
    CHECK(on_device.data().x.device() == device);
    for (int epoch : {0, 3}) {
      const Array key = random::fold_in(random::key(5), epoch);
      // The permutation is drawn on the device, bit for bit the host's.
      const auto e = on_device.epoch(16, key);
      REQUIRE(e.permutation().valid());
      CHECK(e.permutation().device() == device);
      CHECK(e.permutation().to_vector<std::int32_t>() == random::permutation(key, 103).to_vector<std::int32_t>());
      check_same_batches(d, on_device, 16, key, false);
      check_same_batches(d, on_device, 16, key, true);
    }
    check_same_batches(d, on_device, 10, std::nullopt, false);  // in order, the last batch of 3 rows
    CHECK_FALSE(on_device.epoch(10).permutation().valid());
  }
  set_cpu_device_count(previous);
}

TEST_CASE("device data: the last partial batch, drop_last, and a batch of the whole data set") {
  const Example d = counting_data(10);
  const DeviceDataset<Example> on_device(d, Device::cpu(0));
  auto e = on_device.epoch(4, random::key(1));
  REQUIRE(e.size() == 3);
  CHECK(e[2].x.shape() == Shape{2, 3});
  CHECK(e[2].y.shape() == Shape{2});
  CHECK_THROWS_AS(e[3], ValueError);
  CHECK_THROWS_AS(e[-1], ValueError);
  CHECK(on_device.epoch(4, random::key(1), {.drop_last = true}).size() == 2);
  auto whole = on_device.epoch(10, random::key(1));
  REQUIRE(whole.size() == 1);
  std::vector<std::int32_t> labels = whole[0].y.to_vector<std::int32_t>();
  std::vector<std::int32_t> sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int32_t> identity(10);
  std::iota(identity.begin(), identity.end(), 0);
  CHECK(sorted == identity);   // every example once...
  CHECK(labels != identity);   // ...shuffled
  // The rows of every leaf travel together.
  std::vector<float> x = whole[0].x.to_vector<float>();
  for (std::size_t r = 0; r < labels.size(); ++r) CHECK(x[r * 3] == static_cast<float>(labels[r] * 10));
}

TEST_CASE("device data: a batch larger than the data set, and bad leaves, are named errors") {
  const Example d = counting_data(10);
  const DeviceDataset<Example> on_device(d, Device::cpu(0));
  const std::string msg = error_message<ValueError>([&] { on_device.epoch(16, random::key(0)); });
  CHECK(contains(msg, "DeviceDataset::epoch"));
  CHECK(contains(msg, "batch_size (16)"));
  CHECK(contains(msg, "10 examples"));
  CHECK(contains(msg, "f32[10,3]"));
  CHECK(contains(msg, "i32[10]"));
  CHECK_THROWS_AS(on_device.epoch(0), ValueError);
  CHECK(contains(error_message<ShapeError>([&] { DeviceDataset<Example>(Example{zeros({5, 3}), zeros({4})}, Device::cpu(0)); }),
                 "DeviceDataset"));
  CHECK_THROWS_AS(DeviceDataset<std::vector<Array>>(std::vector<Array>{}, Device::cpu(0)), ValueError);
}
