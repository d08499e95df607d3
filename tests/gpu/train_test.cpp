// On a GPU: the training toolbox's device data and its epoch as one jitted scan — a data set held
// on cuda:0, shuffled there, scanned by an Adam step — against the same epoch on cpu:0.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include <canopy/canopy.hpp>
#include <canopy/nn.hpp>
#include <canopy/train.hpp>

#include "gpu_check.hpp"

using namespace canopy;

using gpu_test::check_close;
using gpu_test::kGpu;

namespace {

struct Net {
  Array w1, b1, w2, b2;
};
struct Rows {
  Array x, y;
};

Array net_loss(const Net& p, const Rows& b, const Array&) {
  const Array h = nn::relu(matmul(b.x, p.w1) + p.b1);
  return mean(optim::softmax_cross_entropy_with_integer_labels(matmul(h, p.w2) + p.b2, b.y));
}

}  // namespace

TEST_CASE("train on cuda:0: an epoch as one jitted scan over the data set held on the GPU gives the CPU's epoch") {
  const auto k = random::split(random::key(0), 4);
  const Rows data{random::normal(k[0], {70, 8}), random::randint(k[1], {70}, 0, 4)};
  const Net init{random::normal(k[2], {8, 16}) * 0.3f, zeros({16}), random::normal(k[3], {16, 4}) * 0.3f, zeros({4})};
  auto tx = optim::adam(1e-2);
  auto epoch_fn = make_scan_epoch(make_train_step(net_loss, tx));
  const DeviceDataset<Rows> on_cpu(data, Device::cpu(0)), on_gpu(data, kGpu);
  auto cpu_state = init_train_state(init, tx, random::key(5));
  auto gpu_state = device_put(init_train_state(init, tx, random::key(5)), kGpu);
  for (int e = 0; e < 2; ++e) {  // 4 full batches of 16 scanned, then the last 6 rows as one step
    CAPTURE(e);
    const Array key = random::fold_in(random::key(3), e);
    const auto gpu_epoch = on_gpu.epoch(16, key);
    CHECK(gpu_epoch.stacked().x.device() == kGpu);
    auto [g, g_metrics] = epoch_fn(gpu_state, gpu_epoch);
    auto [c, c_metrics] = epoch_fn(cpu_state, on_cpu.epoch(16, key));
    check_close(g_metrics.loss, c_metrics.loss, "per-step losses", 10.0);
    check_close(g.params.w1, c.params.w1, ".params.w1", 100.0);
    check_close(g.params.b2, c.params.b2, ".params.b2", 100.0);
    CHECK(g.step.device() == kGpu);
    CHECK(g.step.item<std::int32_t>() == c.step.item<std::int32_t>());
    gpu_state = std::move(g);
    cpu_state = std::move(c);
  }
  CHECK(epoch_fn.scanned().cache_misses() == 2);  // one trace per device: the avals' devices are in the key
}
