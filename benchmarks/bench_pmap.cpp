// Devices and pmap: psum of 64 MiB f32 across 2 virtual devices
// beside memcpy of the same bytes, the rendezvous cost of a tiny psum, and the W3 MLP SGD step
// data-parallel over 2 devices beside the jitted step on 1 (the same 128 examples per step).
// Run with CANOPY_CPU_DEVICES unset: the benchmarks set the device count themselves.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "w3_mlp.hpp"

using namespace w3;

namespace {

constexpr std::int64_t kFloats = 16 << 20;  // 64 MiB of f32

void BM_memcpy_64MiB(benchmark::State& state) {
  std::vector<float> src(kFloats, 1.f), dst(kFloats);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kFloats * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetBytesProcessed(state.iterations() * kFloats * 4);
}

/// pmap of psum over 2 devices, each contributing 64 MiB; the result's first element is what
/// comes back, so the time is the split, the collective and the rendezvous (no stacking).
void BM_psum_64MiB_2_devices(benchmark::State& state) {
  set_cpu_device_count(2);
  Array x = ones({2, kFloats});
  auto f = pmap([](const Array& v) { return psum(v, "i")[0]; }, axis_name("i"));
  (void)f(x);
  for (auto _ : state) {
    Array y = f(x);
    benchmark::DoNotOptimize(y.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * kFloats * 4);
}

/// The fixed cost of a pmap with one collective on a scalar per device.
void BM_psum_scalar_2_devices(benchmark::State& state) {
  set_cpu_device_count(2);
  Array x = ones({2});
  auto f = pmap([](const Array& v) { return psum(v, "i"); }, axis_name("i"));
  (void)f(x);
  for (auto _ : state) {
    Array y = f(x);
    benchmark::DoNotOptimize(y.data<float>());
  }
}

void BM_w3_step_jit_1_device(benchmark::State& state) { w3::time_jitted_sgd_steps(state); }

/// Data parallel: 64 examples per device, gradients averaged with pmean, parameters replicated.
void BM_w3_step_pmap_2_devices(benchmark::State& state) {
  set_cpu_device_count(2);
  Mlp m = replicate(make_mlp());
  Batch b = make_batch(128);
  Array x = shard(b.x), y = shard(b.onehot);
  auto step = pmap(
      [](const Mlp& p, const Array& xs, const Array& ys) {
        Mlp g = grad(loss)(p, xs, ys);
        Mlp out = p;
        for (std::size_t l = 0; l < p.size(); ++l)
          out[l] = {p[l].w - pmean(g[l].w, "batch") * 0.01f, p[l].b - pmean(g[l].b, "batch") * 0.01f};
        return out;
      },
      axis_name("batch"), donate_argnums<0>);
  m = step(m, x, y);
  for (auto _ : state) {
    m = step(m, x, y);
    benchmark::DoNotOptimize(m[2].b.data<float>());
  }
}

}  // namespace

BENCHMARK(BM_memcpy_64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_psum_64MiB_2_devices)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_psum_scalar_2_devices)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_w3_step_jit_1_device)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_w3_step_pmap_2_devices)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
