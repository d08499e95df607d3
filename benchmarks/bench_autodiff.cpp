// W3 (shared/BENCHMARKS.md), eager: the MLP 784-512-512-10 with ReLU and mean softmax
// cross-entropy, batch 128, f32. value_and_grad(loss) against loss alone in the same run
// (the cheap-gradient bound says <= 3x); per-example gradients by vmap(grad) against a loop of
// grad; and the overhead of grad on a scalar function of one scalar.
#include <cmath>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include <canopy/nn.hpp>
#include <canopy/transforms.hpp>

#include "w3_mlp.hpp"

namespace {

using namespace canopy;
using namespace w3;

void BM_mlp_loss(benchmark::State& state) {
  Mlp m = make_mlp();
  Batch b = make_batch(128);
  for (auto _ : state) benchmark::DoNotOptimize(loss(m, b.x, b.onehot).item<float>());
}

void BM_mlp_value_and_grad(benchmark::State& state) {
  Mlp m = make_mlp();
  Batch b = make_batch(128);
  auto vg = value_and_grad(loss);
  for (auto _ : state) {
    auto [v, g] = vg(m, b.x, b.onehot);
    benchmark::DoNotOptimize(v.item<float>());
    benchmark::DoNotOptimize(g[2].b.data<float>());
  }
}

void BM_per_example_grads_vmap(benchmark::State& state) {
  Mlp m = make_mlp();
  Batch b = make_batch(128);
  auto per_example = vmap(grad(loss), in_axes(none, 0, 0));
  // One untimed call first: it faults in the ~340 MB of per-example gradients, which the caching
  // allocator then reuses (the first call on this VM spends ~0.5 s zeroing fresh pages).
  (void)per_example(m, b.x, b.onehot);
  for (auto _ : state) {
    Mlp g = per_example(m, b.x, b.onehot);
    benchmark::DoNotOptimize(g[0].w.data<float>());
  }
}

void BM_per_example_grads_loop(benchmark::State& state) {
  Mlp m = make_mlp();
  Batch b = make_batch(128);
  std::vector<Array> xs, ys;
  auto xv = b.x.to_vector<float>(), yv = b.onehot.to_vector<float>();
  for (int i = 0; i < 128; ++i) {
    xs.push_back(array(std::vector<float>(xv.begin() + i * 784, xv.begin() + (i + 1) * 784), {784}));
    ys.push_back(array(std::vector<float>(yv.begin() + i * 10, yv.begin() + (i + 1) * 10), {10}));
  }
  auto g = grad(loss);
  (void)g(m, xs[0], ys[0]);
  // Each example's gradient is dropped at once (not stacked as vmap's are): favours the loop.
  for (auto _ : state)
    for (int i = 0; i < 128; ++i) benchmark::DoNotOptimize(g(m, xs[static_cast<std::size_t>(i)], ys[static_cast<std::size_t>(i)])[0].w.data<float>());
}

void BM_grad_scalar_overhead(benchmark::State& state) {
  auto g = grad([](const Array& x) { return x * x; });
  Array x = scalar(3.f);
  for (auto _ : state) benchmark::DoNotOptimize(g(x).item<float>());
}

}  // namespace

BENCHMARK(BM_mlp_loss)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mlp_value_and_grad)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_per_example_grads_vmap)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_per_example_grads_loop)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_grad_scalar_overhead)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
