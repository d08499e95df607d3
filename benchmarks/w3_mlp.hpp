// The W3 workload of shared/BENCHMARKS.md, shared by the eager and jit benchmarks: the MLP
// 784-512-512-10 with ReLU, PyTorch's default init from a fixed seed, mean softmax cross-entropy.
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include <canopy/nn.hpp>
#include <canopy/transforms.hpp>

namespace w3 {

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

/// One SGD step of W3 (lr 0.01): the new parameters.
inline Mlp sgd_step(const Mlp& m, const Array& x, const Array& onehot) {
  Mlp g = grad(loss)(m, x, onehot);
  Mlp out = m;
  for (std::size_t l = 0; l < m.size(); ++l) out[l] = {m[l].w - g[l].w * 0.01f, m[l].b - g[l].b * 0.01f};
  return out;
}

/// The jitted W3 step at batch 128 (one warm-up call, then one step per iteration): bench_jit's
/// figure, and bench_pmap's one-device baseline in its own run.
inline void time_jitted_sgd_steps(benchmark::State& state) {
  Mlp m = make_mlp();
  Batch b = make_batch(128);
  auto step = jit(sgd_step);
  m = step(m, b.x, b.onehot);
  for (auto _ : state) {
    m = step(m, b.x, b.onehot);
    benchmark::DoNotOptimize(m[2].b.data<float>());
  }
  // The step's buffers (bytes): the intermediates' arena against one buffer per intermediate.
  const MemoryAnalysis mem = step.lower(m, b.x, b.onehot).memory_analysis();
  state.counters["temp_bytes"] = static_cast<double>(mem.temp_bytes);
  state.counters["temp_unplanned_bytes"] = static_cast<double>(mem.temp_unplanned_bytes);
  state.counters["args_bytes"] = static_cast<double>(mem.argument_bytes);
  state.counters["out_bytes"] = static_cast<double>(mem.output_bytes);
}

}  // namespace w3
