// Indexing and data movement, eager: take of embedding rows (a 2^16 x 128 f32 table, 4096 random
// rows; GB/s = bytes written and read), the matching scatter-add (the embedding gradient), each
// next to a hand-written loop in the same run; take_along_axis of [128,10] logits by label (the
// cross-entropy pick, dispatch-bound); concatenate and pad of 2^20 f32.
#include <cstring>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include <canopy/canopy.hpp>

namespace {

constexpr std::int64_t kRows = 1 << 16, kCols = 128, kPicks = 4096;

canopy::Array table() {
  std::vector<float> v(static_cast<std::size_t>(kRows * kCols));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 97);
  return canopy::array(v, {kRows, kCols});
}
std::vector<int> picks() {
  std::mt19937 g(5);
  std::uniform_int_distribution<int> u(0, kRows - 1);
  std::vector<int> v(kPicks);
  for (auto& x : v) x = u(g);
  return v;
}

void BM_canopy_take_rows(benchmark::State& state) {
  canopy::Array t = table(), idx = canopy::array(picks(), {kPicks});
  for (auto _ : state) {
    canopy::Array y = canopy::take(t, idx, 0);
    benchmark::DoNotOptimize(y.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * 2 * kPicks * kCols * 4);
}

void BM_loop_take_rows(benchmark::State& state) {
  canopy::Array t = table();
  auto idx = picks();
  std::vector<float> out(static_cast<std::size_t>(kPicks * kCols));
  const float* src = t.data<float>();
  for (auto _ : state) {
    for (std::int64_t i = 0; i < kPicks; ++i)
      std::memcpy(out.data() + i * kCols, src + idx[static_cast<std::size_t>(i)] * kCols, kCols * sizeof(float));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * kPicks * kCols * 4);
}

void BM_canopy_scatter_add_rows(benchmark::State& state) {
  canopy::Array t = canopy::zeros({kRows, kCols}), idx = canopy::array(picks(), {kPicks});
  canopy::Array g = canopy::ones({kPicks, kCols});
  for (auto _ : state) {
    canopy::Array y = t.at(idx).add(g);
    benchmark::DoNotOptimize(y.data<float>());
  }
  // The copy of the operand dominates: count it (read + write) plus the updates read.
  state.SetBytesProcessed(state.iterations() * (2 * kRows + kPicks) * kCols * 4);
}

void BM_loop_scatter_add_rows(benchmark::State& state) {
  std::vector<float> t(static_cast<std::size_t>(kRows * kCols), 0.f), out(t.size());
  std::vector<float> g(static_cast<std::size_t>(kPicks * kCols), 1.f);
  auto idx = picks();
  for (auto _ : state) {
    std::memcpy(out.data(), t.data(), t.size() * sizeof(float));
    for (std::int64_t i = 0; i < kPicks; ++i) {
      float* o = out.data() + idx[static_cast<std::size_t>(i)] * kCols;
      const float* u = g.data() + i * kCols;
      for (std::int64_t j = 0; j < kCols; ++j) o[j] += u[j];
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (2 * kRows + kPicks) * kCols * 4);
}

void BM_canopy_take_along_axis_labels(benchmark::State& state) {
  canopy::Array logits = canopy::ones({128, 10});
  std::vector<int> labels(128);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int>(i % 10);
  canopy::Array l = canopy::array(labels, {128, 1});
  for (auto _ : state) {
    canopy::Array y = canopy::take_along_axis(logits, l, 1);
    benchmark::DoNotOptimize(y.data<float>());
  }
}

void BM_canopy_concatenate(benchmark::State& state) {
  canopy::Array a = canopy::ones({512, 1024}), b = canopy::ones({512, 1024});
  for (auto _ : state) {
    canopy::Array y = canopy::concatenate({a, b}, 1);
    benchmark::DoNotOptimize(y.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * 2 * 2 * 512 * 1024 * 4);
}

void BM_canopy_pad(benchmark::State& state) {
  canopy::Array a = canopy::ones({1024, 1024});
  for (auto _ : state) {
    canopy::Array y = canopy::pad(a, {{1, 1}, {1, 1}});
    benchmark::DoNotOptimize(y.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * 2 * 1024 * 1024 * 4);
}

}  // namespace

BENCHMARK(BM_canopy_take_rows)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_loop_take_rows)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_canopy_scatter_add_rows)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_loop_scatter_add_rows)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_canopy_take_along_axis_labels)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_canopy_concatenate)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_canopy_pad)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
