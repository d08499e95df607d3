// W2 (shared/BENCHMARKS.md): f32 C = A @ B, n in {256..2048}, GFLOP/s = 2n^3/t, canopy's eager
// matmul next to a oneDNN matmul primitive created once and called directly, in the same run.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include <sys/mman.h>

#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <canopy/canopy.hpp>

#include "uniform_data.hpp"

namespace {

void set_flops(benchmark::State& state, std::int64_t n) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(n) * double(n) * double(n) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void BM_canopy_matmul(benchmark::State& state) {
  std::int64_t n = state.range(0);
  canopy::Array a = canopy::array(uniform(n * n, 1), {n, n}), b = canopy::array(uniform(n * n, 2), {n, n});
  for (auto _ : state) {
    canopy::Array c = canopy::matmul(a, b);
    benchmark::DoNotOptimize(c.data<float>());
  }
  set_flops(state, n);
}

// The peer, with its buffers either from std::vector (4K pages) or 2 MiB-aligned with
// MADV_HUGEPAGE, which is what canopy's caching allocator does for blocks of 2 MiB and up.
template <bool kHugePages>
void BM_onednn_direct(benchmark::State& state) {
  std::int64_t n = state.range(0);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  dnnl::memory::desc md({n, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
  dnnl::matmul mm(dnnl::matmul::primitive_desc({md, md, md}, eng));
  std::size_t bytes = sizeof(float) * static_cast<std::size_t>(n * n);
  auto alloc = [&](const std::vector<float>& init) {
    constexpr std::size_t kHuge = std::size_t{1} << 21;
    std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    auto* p = static_cast<float*>(kHugePages ? std::aligned_alloc(kHuge, rounded) : std::malloc(bytes));
    if (kHugePages) madvise(p, rounded, MADV_HUGEPAGE);
    std::copy(init.begin(), init.end(), p);
    return std::unique_ptr<float, decltype(&std::free)>(p, &std::free);
  };
  auto av = alloc(uniform(n * n, 1)), bv = alloc(uniform(n * n, 2)), cv = alloc(std::vector<float>(bytes / 4));
  dnnl::memory am(md, eng, av.get()), bm(md, eng, bv.get()), cm(md, eng, cv.get());
  for (auto _ : state) {
    mm.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    s.wait();
    benchmark::DoNotOptimize(cv.get());
  }
  set_flops(state, n);
}

}  // namespace

BENCHMARK(BM_onednn_direct<false>)->Name("BM_onednn_direct")->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_onednn_direct<true>)->Name("BM_onednn_direct_hugepages")->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_canopy_matmul)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
