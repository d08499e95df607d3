// jit (shared/BENCHMARKS.md W8 and W3): the cost of a cache hit of a jitted `a + b` on
// 1-element arrays beside eager `a + b`; the W3 training step (value_and_grad + SGD update)
// eager and jitted in the same run; the time to a jitted step's first call (trace + compile + run);
// a dense layer tanh(x W * s + b) with its epilogue as oneDNN post-ops, as passes after the
// matmul, and unfused (the matmul, then one fused elementwise kernel).
#include <benchmark/benchmark.h>

#include <canopy/kernels/cpu.hpp>
#include <canopy/random.hpp>
#include <canopy/transforms.hpp>

#include "w3_mlp.hpp"

namespace {

using namespace canopy;
using namespace w3;

void BM_eager_add_1elem(benchmark::State& state) {
  Array a = array({1.f}), b = array({2.f});
  for (auto _ : state) {
    Array c = a + b;
    benchmark::DoNotOptimize(c.impl().get());
  }
}

void BM_jit_add_1elem_cache_hit(benchmark::State& state) {
  Array a = array({1.f}), b = array({2.f});
  auto add = jit([](const Array& x, const Array& y) { return x + y; });
  (void)add(a, b);
  for (auto _ : state) {
    Array c = add(a, b);
    benchmark::DoNotOptimize(c.impl().get());
  }
}

void BM_mlp_step_eager(benchmark::State& state) {
  Mlp m = make_mlp();
  Batch b = make_batch(128);
  for (auto _ : state) {
    m = sgd_step(m, b.x, b.onehot);
    benchmark::DoNotOptimize(m[2].b.data<float>());
  }
}

void BM_mlp_step_jit(benchmark::State& state) { w3::time_jitted_sgd_steps(state); }

void BM_mlp_step_jit_first_call(benchmark::State& state) {
  Mlp m = make_mlp();
  Batch b = make_batch(128);
  for (auto _ : state) {
    auto step = jit(sgd_step);  // a fresh cache: trace + simplify + plan + one run
    Mlp out = step(m, b.x, b.onehot);
    benchmark::DoNotOptimize(out[2].b.data<float>());
  }
}

/// Dense layer, batch `rows`, 256 -> 1024: how = 0 post-ops, 1 epilogue as passes, 2 epilogue fusion off.
void BM_dense_tanh(benchmark::State& state) {
  const std::int64_t rows = state.range(0);
  const int how = static_cast<int>(state.range(1));
  const Array x = random::uniform(random::key(0), {rows, 256}), w = random::uniform(random::key(1), {256, 1024});
  const Array b = random::uniform(random::key(2), {1024});
  auto layer = [](const Array& x, const Array& w, const Array& b) { return tanh(matmul(x, w) * 0.5f + b); };
  kernels::cpu::set_epilogue_post_ops(how != 1);
  set_epilogue_fusion(how != 2);
  auto f = jit(layer);
  (void)f(x, w, b);
  for (auto _ : state) {
    Array y = f(x, w, b);
    benchmark::DoNotOptimize(y.impl().get());
  }
  kernels::cpu::set_epilogue_post_ops(true);
  set_epilogue_fusion(true);
  state.SetLabel(how == 0 ? "post-ops" : how == 1 ? "epilogue passes" : "matmul + fused kernel");
  state.counters["out_MB"] = static_cast<double>(rows * 1024 * 4) / 1e6;
}

}  // namespace

BENCHMARK(BM_dense_tanh)->ArgsProduct({{128, 4096}, {0, 1, 2}})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_eager_add_1elem);
BENCHMARK(BM_jit_add_1elem_cache_hit);
BENCHMARK(BM_mlp_step_eager)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mlp_step_jit)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mlp_step_jit_first_call)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
