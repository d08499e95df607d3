// W9 of shared/BENCHMARKS.md: Fashion-MNIST epochs of the W3 MLP with Adam (lr 1e-3, batch 128,
// last batch of 96 kept, a fresh permutation per epoch), eager and jitted, with the test
// accuracy after the timed epochs as a counter; the pieces of an epoch: one Adam step and the host
// batching of a shuffled epoch; and W4, the CNN's SGD step at batch 64. The LibTorch peers are
// benchmarks/peers/fashion_mnist_libtorch and cnn_step_libtorch.
#include <benchmark/benchmark.h>

#include <filesystem>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

#include "../examples/fashion_mnist/model.hpp"

namespace {

using namespace canopy;
using fashion_mnist::Mlp;
using Data = ImageClassification;

bool have_data() { return std::filesystem::exists(std::filesystem::path(fashion_mnist_default_dir) / "train-labels-idx1-ubyte.gz"); }

const Data& train_set() {
  static const Data d = load_fashion_mnist("train");
  return d;
}
const Data& test_set() {
  static const Data d = load_fashion_mnist("test");
  return d;
}

Array loss_fn(const Mlp& p, const Data& b, const Array&) { return fashion_mnist::cross_entropy(p(b.images), b.labels); }

double test_accuracy(const Mlp& p) {
  double correct = 0;
  for (const Data& b : batches(test_set(), 1000)) correct += sum(argmax(p(b.images), -1) == b.labels).item<int>();
  return correct / static_cast<double>(test_set().labels.shape(0));
}

/// One W9 epoch per iteration; `jitted` picks the step. The accuracy after the last epoch is a counter.
void BM_w9_epoch(benchmark::State& st, bool jitted) {
  if (!have_data()) {
    st.SkipWithError("dataset-fashion-mnist is not installed");
    return;
  }
  Array keys = random::split(random::key(0), 3);
  auto tx = optim::adam(1e-3);
  auto state = init_train_state(Mlp::init(keys[0]), tx, keys[1]);
  auto eager = make_train_step(loss_fn, tx);
  auto compiled = jit(eager);
  int epoch = 0;
  for (auto _ : st) {
    for (const Data& b : batches(train_set(), 128, random::fold_in(keys[2], epoch))) {
      auto [next, info] = jitted ? compiled(state, b) : eager(state, b);
      state = std::move(next);
    }
    ++epoch;
  }
  st.counters["test_accuracy"] = test_accuracy(state.params);
  st.counters["epochs"] = epoch;
}
BENCHMARK_CAPTURE(BM_w9_epoch, jit, true)->Iterations(5)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_w9_epoch, eager, false)->Iterations(5)->Unit(benchmark::kSecond)->UseRealTime();

/// One Adam step of W9 on a fixed batch of 128.
void BM_w9_adam_step(benchmark::State& st, bool jitted) {
  if (!have_data()) {
    st.SkipWithError("dataset-fashion-mnist is not installed");
    return;
  }
  auto tx = optim::adam(1e-3);
  auto state = init_train_state(Mlp::init(random::key(0)), tx, random::key(1));
  auto eager = make_train_step(loss_fn, tx);
  auto compiled = jit(eager);
  Data batch = batches(train_set(), 128)[0];
  for (auto _ : st) {
    auto [next, info] = jitted ? compiled(state, batch) : eager(state, batch);
    state = std::move(next);
  }
}
BENCHMARK_CAPTURE(BM_w9_adam_step, jit, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_w9_adam_step, eager, false)->Unit(benchmark::kMillisecond)->UseRealTime();

/// The jitted Adam step with the state donated (donate_argnums<0>): parameters and moments are
/// updated in their own buffers.
void BM_w9_adam_step_donated(benchmark::State& st) {
  if (!have_data()) {
    st.SkipWithError("dataset-fashion-mnist is not installed");
    return;
  }
  auto tx = optim::adam(1e-3);
  auto state = init_train_state(Mlp::init(random::key(0)), tx, random::key(1));
  auto compiled = jit(make_train_step(loss_fn, tx), donate_argnums<0>);
  Data batch = batches(train_set(), 128)[0];
  for (auto _ : st) {
    auto [next, info] = compiled(state, batch);
    state = std::move(next);
  }
}
BENCHMARK(BM_w9_adam_step_donated)->Unit(benchmark::kMillisecond)->UseRealTime();

/// W4: one SGD (0.01) step of the CNN on a fixed batch of 64 random images, random labels.
void BM_w4_cnn_step(benchmark::State& st, bool jitted) {
  auto tx = optim::sgd(0.01);
  auto state = init_train_state(fashion_mnist::Cnn::init(random::key(0)), tx, random::key(1));
  auto loss = [](const fashion_mnist::Cnn& p, const Data& b, const Array&) {
    return fashion_mnist::cross_entropy(p(b.images), b.labels);
  };
  auto eager = make_train_step(loss, tx);
  auto compiled = jit(eager);
  Data batch{random::uniform(random::key(2), {64, 784}), random::randint(random::key(3), {64}, 0, 10)};
  for (auto _ : st) {
    auto [next, info] = jitted ? compiled(state, batch) : eager(state, batch);
    state = std::move(next);
  }
}
BENCHMARK_CAPTURE(BM_w4_cnn_step, jit, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_w4_cnn_step, eager, false)->Unit(benchmark::kMillisecond)->UseRealTime();

/// The host side of an epoch: the permutation and the row copies of 469 batches of 60000×784 f32.
void BM_w9_batching_epoch(benchmark::State& st) {
  Data d{zeros({60000, 784}), zeros({60000}, DType::i32)};
  int epoch = 0;
  for (auto _ : st) {
    std::int64_t rows = 0;
    for (const Data& b : batches(d, 128, random::fold_in(random::key(2), epoch++))) rows += b.labels.shape(0);
    benchmark::DoNotOptimize(rows);
  }
  st.SetBytesProcessed(st.iterations() * 60000 * (784 + 1) * 4);
}
BENCHMARK(BM_w9_batching_epoch)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
