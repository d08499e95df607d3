// W9 of shared/BENCHMARKS.md: Fashion-MNIST epochs of the W3 MLP with Adam (lr 1e-3, batch 128,
// last batch of 96 kept, a fresh permutation per epoch), eager, jitted and as one jitted scan, with the test
// accuracy after the timed epochs as a counter; the pieces of an epoch: one Adam step and the host
// batching of a shuffled epoch; and W4, the CNN's SGD step at batch 64. The LibTorch peers are
// benchmarks/peers/fashion_mnist_libtorch and cnn_step_libtorch.
#include <benchmark/benchmark.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <vector>

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

/// How BM_w9_epoch runs an epoch: the step eagerly or jitted, batch by batch from the host's
/// batches; or as one jitted scan over the epoch's batches stacked on cpu:0 (DeviceDataset, shuffled
/// there; the last batch of 96 as one more jitted step), which reaches the jitted loop's states.
enum class EpochMode { eager, jit, scan };

/// One W9 epoch per iteration, run as `mode` says. The accuracy after the last epoch is a counter.
void BM_w9_epoch(benchmark::State& st, EpochMode mode) {
  if (!have_data()) {
    st.SkipWithError("dataset-fashion-mnist is not installed");
    return;
  }
  Array keys = random::split(random::key(0), 3);
  auto tx = optim::adam(1e-3);
  auto state = init_train_state(Mlp::init(keys[0]), tx, keys[1]);
  auto eager = make_train_step(loss_fn, tx);
  auto compiled = jit(eager);
  auto scan_epoch = make_scan_epoch(eager);
  std::optional<DeviceDataset<Data>> on_device;
  if (mode == EpochMode::scan) on_device.emplace(train_set(), Device::cpu(0));
  int epoch = 0;
  for (auto _ : st) {
    const Array epoch_key = random::fold_in(keys[2], epoch);
    if (mode == EpochMode::scan) {
      state = scan_epoch(state, on_device->epoch(128, epoch_key)).first;
    } else {
      for (const Data& b : batches(train_set(), 128, epoch_key)) {
        auto [next, info] = mode == EpochMode::jit ? compiled(state, b) : eager(state, b);
        state = std::move(next);
      }
    }
    ++epoch;
  }
  st.counters["test_accuracy"] = test_accuracy(state.params);
  st.counters["epochs"] = epoch;
}
BENCHMARK_CAPTURE(BM_w9_epoch, jit, EpochMode::jit)->Iterations(5)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_w9_epoch, eager, EpochMode::eager)->Iterations(5)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_w9_epoch, scan, EpochMode::scan)->Iterations(5)->Unit(benchmark::kSecond)->UseRealTime();

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

/// The W9 step's Adam update alone (670K parameters: the MLP's six leaves), range(0): 0 canopy's
/// jitted optimizer update (one fused kernel per leaf), 1 the same arithmetic as one hand-written
/// loop per leaf (2 OpenMP threads, its outputs written into buffers kept between calls), 2 the
/// memory traffic alone: a loop that reads p, g, m, v and writes three arrays with one add each.
/// Bytes counted: the 4 arrays read and 3 written, 28 bytes per parameter.
void BM_w9_adam_update(benchmark::State& st) {
  auto tx = optim::adam(1e-3);
  const Mlp params = Mlp::init(random::key(0));
  auto state = tx.init(params);
  Mlp grads = params;
  for (auto& l : grads.layers) {
    l.w = random::normal(random::key(5), l.w.shape()) * 1e-3f;
    l.b = random::normal(random::key(6), l.b.shape()) * 1e-3f;
  }
  std::int64_t n = 0;
  for (const auto& l : params.layers) n += l.w.size() + l.b.size();
  if (st.range(0) == 0) {
    auto update = jit([&tx](const Mlp& p, const Mlp& g, const decltype(state)& s) {
      auto [u, next] = tx.update(g, s, p);
      return std::pair{optim::apply_updates(p, u), next};
    });
    for (auto _ : st) {
      auto [p2, s2] = update(params, grads, state);
      state = std::move(s2);
      benchmark::DoNotOptimize(p2.layers[0].w.data<float>());
    }
  } else {
    // Flat copies of the leaves, the moments and three output buffers per leaf.
    struct Leaf {
      std::vector<float> p, g, m, v, p2, m2, v2;
    };
    std::vector<Leaf> leaves;
    for (std::size_t l = 0; l < params.layers.size(); ++l)
      for (const auto& [a, b] : {std::pair{params.layers[l].w, grads.layers[l].w}, std::pair{params.layers[l].b, grads.layers[l].b}}) {
        Leaf f{a.to_vector<float>(), b.to_vector<float>(), {}, {}, {}, {}, {}};
        f.m.assign(f.p.size(), 0.f);
        f.v = f.m2 = f.v2 = f.p2 = f.m;
        leaves.push_back(std::move(f));
      }
    int t = 0;
    const bool traffic = st.range(0) == 2;
    for (auto _ : st) {
      ++t;
      const float b1 = 0.9f, b2 = 0.999f, lr = 1e-3f, eps = 1e-8f;
      const float c1 = 1.0f - std::pow(b1, static_cast<float>(t)), c2 = 1.0f - std::pow(b2, static_cast<float>(t));
      for (Leaf& f : leaves) {
        const auto size = static_cast<std::int64_t>(f.p.size());
        const float *p = f.p.data(), *g = f.g.data(), *m = f.m.data(), *v = f.v.data();
        float *p2 = f.p2.data(), *m2 = f.m2.data(), *v2 = f.v2.data();
        if (traffic) {
#pragma omp parallel for simd schedule(static) if (size > 32768)
          for (std::int64_t i = 0; i < size; ++i) {
            p2[i] = p[i] + g[i];
            m2[i] = m[i] + g[i];
            v2[i] = v[i] + g[i];
          }
        } else {
#pragma omp parallel for simd schedule(static) if (size > 32768)
          for (std::int64_t i = 0; i < size; ++i) {
            const float mi = (1 - b1) * g[i] + b1 * m[i], vi = (1 - b2) * g[i] * g[i] + b2 * v[i];
            m2[i] = mi;
            v2[i] = vi;
            p2[i] = p[i] - lr * ((mi / c1) / (std::sqrt(vi / c2) + eps));
          }
        }
        std::swap(f.m, f.m2);
        std::swap(f.v, f.v2);
      }
      benchmark::ClobberMemory();
    }
  }
  st.SetBytesProcessed(st.iterations() * 28 * n);
  st.SetLabel(st.range(0) == 0 ? "canopy jit" : st.range(0) == 1 ? "hand loop" : "memory traffic");
}
BENCHMARK(BM_w9_adam_update)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond)->UseRealTime();

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
