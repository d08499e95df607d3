// jit (shared/BENCHMARKS.md W8 and W3): the cost of a cache hit of a jitted `a + b` on
// 1-element arrays beside eager `a + b`; the W3 training step (value_and_grad + SGD update)
// eager and jitted in the same run; the time to a jitted step's first call (trace + compile + run).
#include <benchmark/benchmark.h>

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

}  // namespace

BENCHMARK(BM_eager_add_1elem);
BENCHMARK(BM_jit_add_1elem_cache_hit);
BENCHMARK(BM_mlp_step_eager)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mlp_step_jit)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mlp_step_jit_first_call)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
