// W5 (shared/BENCHMARKS.md): the chain tanh(x*1.5 - 0.25)*0.75 on 2^20 and 2^24 f32, eager
// and jitted (one fused kernel), GB/s = 8n/t, next to memcpy of the same bytes in the same run;
// and the chain's sum, eager and jitted (the fused kernel sums as it goes, writing nothing),
// GB/s = 4n/t, the bytes it reads; and relu's backward pass jitted (a comparison and a select).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <immintrin.h>

#include <benchmark/benchmark.h>

#include <canopy/canopy.hpp>

#include "canopy/kernels/tanh_rational.hpp"

namespace {

canopy::Array input(std::int64_t n) {
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = u(g);
  return canopy::array(v, {n});
}

void BM_canopy_eager_chain(benchmark::State& state) {
  std::int64_t n = state.range(0);
  canopy::Array x = input(n);
  {  // W5 asks for results within 1e-5 of double-precision tanh: report the worst error
    auto xv = x.to_vector<float>();
    auto yv = (canopy::tanh(x * 1.5f - 0.25f) * 0.75f).to_vector<float>();
    double worst = 0;
    for (std::size_t i = 0; i < xv.size(); ++i)
      worst = std::max(worst, std::fabs(yv[i] - std::tanh(double(xv[i]) * 1.5 - 0.25) * 0.75));
    state.counters["max_abs_err"] = worst;
  }
  for (auto _ : state) {
    canopy::Array y = canopy::tanh(x * 1.5f - 0.25f) * 0.75f;
    benchmark::DoNotOptimize(y.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * 8 * n);
}

void BM_canopy_jit_chain(benchmark::State& state) {
  std::int64_t n = state.range(0);
  canopy::Array x = input(n);
  auto chain = canopy::jit([](const canopy::Array& v) { return canopy::tanh(v * 1.5f - 0.25f) * 0.75f; });
  {
    auto xv = x.to_vector<float>();
    auto yv = chain(x).to_vector<float>();
    double worst = 0;
    for (std::size_t i = 0; i < xv.size(); ++i)
      worst = std::max(worst, std::fabs(yv[i] - std::tanh(double(xv[i]) * 1.5 - 0.25) * 0.75));
    state.counters["max_abs_err"] = worst;
  }
  for (auto _ : state) {
    canopy::Array y = chain(x);
    benchmark::DoNotOptimize(y.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * 8 * n);
}

/// relu's backward pass, where(x > 0, g, 0), jitted: one fused kernel, a comparison and a select,
/// as in every training step of W3 and W4. Its comparison loop is meant to vectorise as the
/// arithmetic does. GB/s = 12n/t (two inputs read, one output written).
void BM_canopy_jit_relu_backward(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const canopy::Array x = input(n), g = x * 0.5f;
  auto backward = canopy::jit([](const canopy::Array& x, const canopy::Array& g) { return canopy::where(x > 0, g, 0.0f); });
  for (auto _ : state) {
    canopy::Array dx = backward(x, g);
    benchmark::DoNotOptimize(dx.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * 12 * n);
}

/// sum(chain): eager (three passes and a reduction) or jitted (one kernel that writes nothing).
void BM_canopy_chain_sum(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const bool jitted = state.range(1) != 0;
  canopy::Array x = input(n);
  auto f = [](const canopy::Array& v) { return canopy::sum(canopy::tanh(v * 1.5f - 0.25f) * 0.75f); };
  auto jf = canopy::jit(f);
  const double want = [&] {
    double s = 0;
    for (float v : x.to_vector<float>()) s += std::tanh(double(v) * 1.5 - 0.25) * 0.75;
    return s;
  }();
  state.counters["rel_err"] = std::fabs((jitted ? jf(x) : f(x)).item<float>() - want) / std::fabs(want);
  for (auto _ : state) {
    canopy::Array y = jitted ? jf(x) : f(x);
    benchmark::DoNotOptimize(y.data<float>());
  }
  state.SetLabel(jitted ? "jit" : "eager");
  state.SetBytesProcessed(state.iterations() * 4 * n);
}

/// The W5 chain as the plain C++ loop a user would write (XLA's rational tanh, the fused
/// kernel's), built for AVX-512 as -march=native would, on the OpenMP threads, into an output
/// kept between calls; `streaming`: whole 64-byte lines stored non-temporally.
__attribute__((target("avx512f"))) void hand_loop_chain(const float* x, float* y, std::int64_t n, bool streaming) {
  if (!streaming) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) y[i] = canopy::kernels::math::tanh_rational(x[i] * 1.5f - 0.25f) * 0.75f;
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t b = 0; b < n; b += 16) {
    alignas(64) float t[16];
#pragma omp simd
    for (int i = 0; i < 16; ++i) t[i] = canopy::kernels::math::tanh_rational(x[b + i] * 1.5f - 0.25f) * 0.75f;
    _mm512_stream_ps(y + b, _mm512_load_ps(t));
  }
  _mm_sfence();
}

void BM_hand_loop_chain(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("the hand loop is built for AVX-512");
    return;
  }
  const std::int64_t n = state.range(0);
  const bool streaming = state.range(1) != 0;
  const std::vector<float> x = input(n).to_vector<float>();
  float* y = static_cast<float*>(std::aligned_alloc(64, static_cast<std::size_t>(n) * sizeof(float)));
  std::fill_n(y, n, 0.0f);
  for (auto _ : state) {
    hand_loop_chain(x.data(), y, n, streaming);
    benchmark::DoNotOptimize(y);
    benchmark::ClobberMemory();
  }
  std::free(y);
  state.SetBytesProcessed(state.iterations() * 8 * n);
  state.SetLabel(streaming ? "streaming stores" : "");
}

void BM_memcpy(benchmark::State& state) {
  std::int64_t n = state.range(0);
  std::vector<float> a(static_cast<std::size_t>(n), 1.f), b(static_cast<std::size_t>(n));
  for (auto _ : state) {
    // Both threads copy half, as the BENCHMARKS.md memcpy figure does.
#pragma omp parallel for schedule(static)
    for (int t = 0; t < 2; ++t)
      std::memcpy(b.data() + t * (n / 2), a.data() + t * (n / 2), sizeof(float) * static_cast<std::size_t>(n / 2));
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 8 * n);
}

}  // namespace

BENCHMARK(BM_memcpy)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();
BENCHMARK(BM_canopy_eager_chain)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();
BENCHMARK(BM_canopy_jit_chain)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();
BENCHMARK(BM_canopy_jit_relu_backward)->Arg(1 << 16)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_hand_loop_chain)->ArgsProduct({{1 << 20, 1 << 24}, {0, 1}})->UseRealTime();
BENCHMARK(BM_canopy_chain_sum)->ArgsProduct({{1 << 24}, {0, 1}})->UseRealTime();
BENCHMARK_MAIN();
