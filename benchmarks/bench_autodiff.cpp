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

namespace {

using namespace canopy;

struct Dense {
  Array w, b;
};
using Mlp = std::vector<Dense>;

/// PyTorch's default init, U(+-1/sqrt(fan_in)), from a fixed seed.
Mlp make_mlp() {
  std::mt19937 rng(0);
  Mlp m;
  const int sizes[] = {784, 512, 512, 10};
  for (int l = 0; l < 3; ++l) {
    std::uniform_real_distribution<float> u(-1.f / std::sqrt(float(sizes[l])), 1.f / std::sqrt(float(sizes[l])));
    std::vector<float> w(static_cast<std::size_t>(sizes[l] * sizes[l + 1])), b(static_cast<std::size_t>(sizes[l + 1]));
    for (float& v : w) v = u(rng);
    for (float& v : b) v = u(rng);
    m.push_back({array(w, {sizes[l], sizes[l + 1]}), array(b, {sizes[l + 1]})});
  }
  return m;
}

struct Batch {
  Array x, onehot;
};
Batch make_batch(int n) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> x(static_cast<std::size_t>(n) * 784), y(static_cast<std::size_t>(n) * 10, 0.f);
  for (float& v : x) v = u(rng);
  for (int i = 0; i < n; ++i) y[static_cast<std::size_t>(i * 10 + static_cast<int>(rng() % 10))] = 1.f;
  return {array(x, {n, 784}), array(y, {n, 10})};
}

Array logits(const Mlp& m, const Array& x) {
  Array h = x;
  for (std::size_t l = 0; l < m.size(); ++l) {
    h = matmul(h, m[l].w) + m[l].b;
    if (l + 1 < m.size()) h = nn::relu(h);
  }
  return h;
}

/// Mean softmax cross-entropy (also for a single example: x [784], onehot [10]).
Array loss(const Mlp& m, const Array& x, const Array& onehot) {
  return -mean(sum(nn::log_softmax(logits(m, x)) * onehot, -1));
}

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
