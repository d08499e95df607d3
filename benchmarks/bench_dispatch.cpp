// W8 (shared/BENCHMARKS.md): eager dispatch overhead, `a + b` on 1-element f32 arrays, ns/op;
// plus `a + 1.0f` (weak scalar promotion) and a unary op for scale.
#include <benchmark/benchmark.h>

#include <canopy/canopy.hpp>

namespace {

void BM_add_1elem(benchmark::State& state) {
  canopy::Array a = canopy::array({1.f}), b = canopy::array({2.f});
  for (auto _ : state) {
    canopy::Array c = a + b;
    benchmark::DoNotOptimize(c.impl().get());
  }
}

void BM_add_scalar_1elem(benchmark::State& state) {
  canopy::Array a = canopy::array({1.f});
  for (auto _ : state) {
    canopy::Array c = a + 1.0f;
    benchmark::DoNotOptimize(c.impl().get());
  }
}

void BM_exp_1elem(benchmark::State& state) {
  canopy::Array a = canopy::array({1.f});
  for (auto _ : state) {
    canopy::Array c = canopy::exp(a);
    benchmark::DoNotOptimize(c.impl().get());
  }
}

}  // namespace

BENCHMARK(BM_add_1elem);
BENCHMARK(BM_add_scalar_1elem);
BENCHMARK(BM_exp_1elem);
BENCHMARK_MAIN();
