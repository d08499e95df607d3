// W6 (shared/BENCHMARKS.md): random::uniform f32 of 2^24 values, GB/s of output = 4n/t, next to
// memcpy and memset of the same 4n bytes in the same run (the bandwidth a generator cheap enough
// to compute is bound by). Run with OMP_NUM_THREADS=2. Also partitionable vs legacy layout, and
// normal (uniform + erf_inv) eager (compiled internally, as jax.random's samplers are jitted),
// inside a user's jit, and with every op on its own kernel (DisableJit) for scale.
#include <cstring>
#include <optional>
#include <vector>

#include <benchmark/benchmark.h>

#include <canopy/canopy.hpp>
#include <canopy/random.hpp>

namespace {

namespace rnd = canopy::random;

void BM_uniform_f32(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const rnd::Layout layout = state.range(1) ? rnd::Layout::legacy : rnd::Layout::partitionable;
  rnd::LayoutScope scope(layout);
  const canopy::Array key = rnd::key(0);
  for (auto _ : state) {
    canopy::Array u = rnd::uniform(key, {n});
    benchmark::DoNotOptimize(u.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * 4 * n);
  state.SetLabel(state.range(1) ? "legacy" : "partitionable");
}

// range(1): 0 eager call, 1 inside a user's jit, 2 one kernel per op (jit disabled).
void BM_normal_f32(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const canopy::Array key = rnd::key(0);
  auto jitted = canopy::jit([n](const canopy::Array& k) { return rnd::normal(k, {n}); });
  std::optional<canopy::DisableJit> unfused;
  if (state.range(1) == 2) unfused.emplace();
  auto draw = [&] { return state.range(1) == 1 ? jitted(key) : rnd::normal(key, {n}); };
  // One call first: on this VM faulting in fresh pages costs ~1 s/GB, and a single slow
  // iteration would otherwise be all Google Benchmark measures of the unfused case.
  draw().data<float>();
  for (auto _ : state) {
    canopy::Array z = draw();
    benchmark::DoNotOptimize(z.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * 4 * n);
  state.SetLabel(state.range(1) == 0 ? "eager" : state.range(1) == 1 ? "jit" : "unfused");
}

// memcpy of the 4n output bytes, split over two threads; bytes counted once (4n/t).
void BM_memcpy(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  std::vector<float> a(static_cast<std::size_t>(n), 1.f), b(static_cast<std::size_t>(n));
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (int t = 0; t < 2; ++t)
      std::memcpy(b.data() + t * (n / 2), a.data() + t * (n / 2), sizeof(float) * static_cast<std::size_t>(n / 2));
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 4 * n);
}

// memset: a pure write stream of the same 4n bytes, the tighter bound for a generator.
void BM_memset(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  std::vector<float> b(static_cast<std::size_t>(n));
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (int t = 0; t < 2; ++t) std::memset(b.data() + t * (n / 2), t + 1, sizeof(float) * static_cast<std::size_t>(n / 2));
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 4 * n);
}

}  // namespace

BENCHMARK(BM_memcpy)->Arg(1 << 24)->UseRealTime();
BENCHMARK(BM_memset)->Arg(1 << 24)->UseRealTime();
BENCHMARK(BM_uniform_f32)->Args({1 << 24, 0})->Args({1 << 24, 1})->UseRealTime();
BENCHMARK(BM_normal_f32)->Args({1 << 24, 0})->Args({1 << 24, 1})->Args({1 << 24, 2})->UseRealTime();
BENCHMARK_MAIN();
