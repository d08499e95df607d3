// An epoch as one jitted scan (train/scan_epoch.hpp): the stacked batches it scans, the states and
// metrics of the step-by-step loop over the same batches, one trace per epoch shape, donation.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/nn.hpp>
#include <canopy/train.hpp>

#include "../helpers/error_message.hpp"
#include "counting_data.hpp"

namespace {

using namespace canopy;
using test::counting_data;
using test::Example;

/// A two-layer MLP on the counting data's 3 features, 5 classes.
struct Mlp {
  Array w1, b1, w2, b2;
};

Mlp init_mlp(const Array& key) {
  Array keys = random::split(key, 2);
  return {random::normal(keys[0], {3, 16}) * 0.3f, zeros({16}), random::normal(keys[1], {16, 5}) * 0.3f, zeros({5})};
}

Array loss_fn(const Mlp& p, const Example& b, const Array&) {
  Array h = nn::relu(matmul(b.x * 0.01f, p.w1) + p.b1);
  Array logits = matmul(h, p.w2) + p.b2;
  return mean(optim::softmax_cross_entropy_with_integer_labels(logits, b.y % 5));
}

auto make_state() { return init_train_state(init_mlp(random::key(1)), optim::adam(1e-2), random::key(2)); }
using State = decltype(make_state());

/// Every Array leaf of `a` equals `b`'s bit for bit (same dtype, shape and values).
template <class T>
void check_bit_equal(const T& a, const T& b) {
  const NamedArrays x = named_arrays(a), y = named_arrays(b);
  REQUIRE(x.size() == y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    CAPTURE(x[i].name);
    REQUIRE(x[i].value.aval() == y[i].value.aval());
    const std::size_t bytes = static_cast<std::size_t>(x[i].value.size()) * itemsize(x[i].value.dtype());
    CHECK(std::memcmp(x[i].value.raw_data(), y[i].value.raw_data(), bytes) == 0);
  }
}

/// The step-by-step loop the scan replaces: the jitted step over batches [first, size()) in order,
/// and the losses it returned.
std::pair<State, std::vector<float>> loop_epoch(const auto& step, State state, const DeviceBatches<Example>& epoch,
                                                 std::int64_t first = 0) {
  std::vector<float> losses;
  for (std::int64_t i = first; i < epoch.size(); ++i) {
    auto [next, info] = step(state, epoch[i]);
    state = std::move(next);
    losses.push_back(info.loss.template item<float>());
  }
  return {std::move(state), losses};
}

}  // namespace

TEST_CASE("scan epoch: stacked batches are the epoch's full batches along a leading axis") {
  const DeviceDataset<Example> on_device(counting_data(103), Device::cpu(0));
  const auto epoch = on_device.epoch(16, random::key(4));
  CHECK(epoch.size() == 7);
  CHECK(epoch.full_batches() == 6);  // the kept last batch of 7 rows is not stacked
  CHECK(on_device.epoch(16, random::key(4), {.drop_last = true}).full_batches() == 6);
  for (std::int64_t first : {0, 4}) {
    CAPTURE(first);
    const Example stacked = epoch.stacked(first);
    CHECK(stacked.tag == 7);
    REQUIRE(stacked.x.shape() == Shape{6 - first, 16, 3});
    REQUIRE(stacked.y.shape() == Shape{6 - first, 16});
    for (std::int64_t k = 0; k < 6 - first; ++k) {
      const Example b = epoch[first + k];
      CHECK(stacked.x[k].to_vector<float>() == b.x.to_vector<float>());
      CHECK(stacked.y[k].to_vector<std::int32_t>() == b.y.to_vector<std::int32_t>());
    }
  }
  const auto whole = on_device.epoch(103);  // one full batch of every row, in order
  CHECK(whole.stacked().y.to_vector<std::int32_t>() == on_device.data().y.to_vector<std::int32_t>());
  const std::string message = error_message<ValueError>([&] { (void)epoch.stacked(6); });
  CHECK(message.find("DeviceBatches::stacked") != std::string::npos);
  CHECK(message.find("6 full batches of 16 rows") != std::string::npos);
}

TEST_CASE("scan epoch: an MLP with Adam gets the step-by-step loop's states and metrics, bit for bit") {
  const DeviceDataset<Example> on_device(counting_data(70), Device::cpu(0));  // 4 batches of 16, then 6 rows
  auto step = make_train_step(loss_fn, optim::adam(1e-2));
  auto jitted_step = jit(step);
  auto scan_epoch = make_scan_epoch(step);
  for (bool drop_last : {false, true}) {
    CAPTURE(drop_last);
    State by_loop = make_state(), by_scan = make_state();
    for (int e = 0; e < 3; ++e) {
      CAPTURE(e);
      const auto epoch = on_device.epoch(16, random::fold_in(random::key(3), e), {.drop_last = drop_last});
      auto [loop_state, losses] = loop_epoch(jitted_step, by_loop, epoch);
      auto [scan_state, metrics] = scan_epoch(by_scan, epoch);
      REQUIRE(metrics.loss.shape() == Shape{epoch.size()});
      CHECK(metrics.loss.to_vector<float>() == losses);
      check_bit_equal(scan_state, loop_state);
      by_loop = std::move(loop_state);
      by_scan = std::move(scan_state);
    }
    CHECK(by_scan.step.item<std::int32_t>() == (drop_last ? 12 : 15));
  }
  // All six epochs stack the same shape ([4, 16, 3]: a last partial batch is not stacked), so the
  // scan was traced once and the other five epochs found it in the cache, whatever their order.
  // The three last partial batches were run by one trace of the step.
  CHECK(scan_epoch.scanned().cache_misses() == 1);
  CHECK(scan_epoch.scanned().cache_hits() == 5);
  CHECK(scan_epoch.last_batch_step().cache_misses() == 1);
  CHECK(scan_epoch.last_batch_step().cache_hits() == 2);
}

TEST_CASE("scan epoch: a resumed epoch starts at its first batch not yet taken") {
  const DeviceDataset<Example> on_device(counting_data(70), Device::cpu(0));
  auto step = make_train_step(loss_fn, optim::adam(1e-2));
  auto scan_epoch = make_scan_epoch(step);
  const auto epoch = on_device.epoch(16, random::key(9));
  for (std::int64_t first : {1, 4}) {  // some full batches left; only the last partial one left
    CAPTURE(first);
    auto [loop_state, losses] = loop_epoch(jit(step), make_state(), epoch, first);
    auto [scan_state, metrics] = scan_epoch(make_state(), epoch, first);
    CHECK(metrics.loss.to_vector<float>() == losses);
    check_bit_equal(scan_state, loop_state);
  }
  const std::string message = error_message<ValueError>([&] { (void)scan_epoch(make_state(), epoch, 5); });
  CHECK(message.find("scan_epoch") != std::string::npos);
  CHECK(message.find("5 batches") != std::string::npos);
}

TEST_CASE("scan epoch: with donate_argnums<0> the epoch consumes the state it is given") {
  const DeviceDataset<Example> on_device(counting_data(70), Device::cpu(0));
  auto step = make_train_step(loss_fn, optim::adam(1e-2));
  auto plain = make_scan_epoch(step);
  auto donating = make_scan_epoch(step, donate_argnums<0>);
  State kept = make_state(), donated = make_state();
  for (int e = 0; e < 2; ++e) {
    const auto epoch = on_device.epoch(16, random::fold_in(random::key(3), e));
    auto [a, metrics_a] = plain(kept, epoch);
    State given = std::move(donated);
    auto [b, metrics_b] = donating(given, epoch);
    for (const NamedArray& leaf : named_arrays(given)) {
      CAPTURE(leaf.name);
      CHECK(leaf.value.is_deleted());
    }
    CHECK_FALSE(kept.params.w1.is_deleted());
    CHECK(metrics_a.loss.to_vector<float>() == metrics_b.loss.to_vector<float>());
    check_bit_equal(a, b);
    kept = std::move(a);
    donated = std::move(b);
  }
  CHECK(donating.scanned().cache_misses() == 1);
}
