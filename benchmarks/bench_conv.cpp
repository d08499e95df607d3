// W-conv: f32 conv2d forward, x 64x28x28x32 (NHWC) -> 64 features, 3x3, SAME,
// stride 1: canopy's eager conv_general_dilated next to a oneDNN convolution primitive created
// once and called directly (NHWC activations, weights pre-reordered to the primitive's format),
// in the same run. Prints one JSON line per peer and the canopy / oneDNN time ratio.
#include <chrono>
#include <cstdio>
#include <vector>

#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <canopy/canopy.hpp>

#include "uniform_data.hpp"

namespace {

constexpr std::int64_t kN = 64, kH = 28, kW = 28, kC = 32, kO = 64, kK = 3;
// 2 * N * H * W * O * C * K * K multiply-adds (SAME, stride 1: output is N x H x W x O).
constexpr double kFlops = 2.0 * kN * kH * kW * kO * kC * kK * kK;

void set_flops(benchmark::State& state) {
  state.counters["GFLOP/s"] = benchmark::Counter(kFlops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_canopy_conv(benchmark::State& state) {
  canopy::Array x = canopy::array(uniform(kN * kH * kW * kC, 1), {kN, kH, kW, kC});
  canopy::Array w = canopy::array(uniform(kK * kK * kC * kO, 2), {kK, kK, kC, kO});
  const canopy::ConvDimensionNumbers dn{"NHWC", "HWIO", "NHWC"};
  for (auto _ : state) {
    canopy::Array y = canopy::conv_general_dilated(x, w, {1, 1}, "SAME", {}, {}, dn);
    benchmark::DoNotOptimize(y.data<float>());
  }
  set_flops(state);
}

void BM_onednn_direct_conv(benchmark::State& state) {
  using dnnl::memory;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  memory::desc src({kN, kC, kH, kW}, memory::data_type::f32, memory::format_tag::nhwc);
  memory::desc dst({kN, kO, kH, kW}, memory::data_type::f32, memory::format_tag::nhwc);
  memory::desc wei_user({kO, kC, kK, kK}, memory::data_type::f32, memory::format_tag::hwio);
  memory::desc wei_any({kO, kC, kK, kK}, memory::data_type::f32, memory::format_tag::any);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                    wei_any, dst, {1, 1}, {1, 1}, {1, 1});
  dnnl::convolution_forward::primitive_desc pd(d, eng);
  dnnl::convolution_forward conv(pd);
  auto xv = uniform(kN * kH * kW * kC, 1), wv = uniform(kK * kK * kC * kO, 2);
  std::vector<float> yv(static_cast<std::size_t>(kN * kH * kW * kO));
  memory xm(src, eng, xv.data()), wm_user(wei_user, eng, wv.data()), ym(dst, eng, yv.data());
  memory wm(pd.weights_desc(), eng);
  dnnl::reorder(wm_user, wm).execute(s, wm_user, wm);  // once, outside the timed loop
  s.wait();
  state.SetLabel(pd.impl_info_str());
  for (auto _ : state) {
    conv.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, ym}});
    s.wait();
    benchmark::DoNotOptimize(yv.data());
  }
  set_flops(state);
}

// Records each benchmark's ms per call, then prints the JSON lines and the ratio at exit.
class JsonReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    // With --benchmark_repetitions the median aggregate is reported, otherwise the single run.
    for (const Run& r : runs) {
      bool aggregate = r.run_type == Run::RT_Aggregate;
      if (r.error_occurred || (aggregate && r.aggregate_name != "median")) continue;
      bool canopy = r.run_name.function_name.find("canopy") != std::string::npos;
      if (aggregate || !(canopy ? canopy_median_ : onednn_median_))
        (canopy ? canopy_ms_ : onednn_ms_) = r.GetAdjustedRealTime();  // in the benchmark's unit: ms
      if (aggregate) (canopy ? canopy_median_ : onednn_median_) = true;
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("{\"workload\":\"W-conv\",\"case\":\"64x28x28x32->64 3x3 SAME\",\"peer\":\"canopy-eager\","
                "\"metric\":\"ms_per_call\",\"value\":%.4f,\"unit\":\"ms\"}\n", canopy_ms_);
    std::printf("{\"workload\":\"W-conv\",\"case\":\"64x28x28x32->64 3x3 SAME\",\"peer\":\"onednn-direct\","
                "\"metric\":\"ms_per_call\",\"value\":%.4f,\"unit\":\"ms\"}\n", onednn_ms_);
    if (onednn_ms_ > 0) std::printf("ratio canopy/onednn = %.3f\n", canopy_ms_ / onednn_ms_);
  }

 private:
  double canopy_ms_ = 0, onednn_ms_ = 0;
  bool canopy_median_ = false, onednn_median_ = false;
};

}  // namespace

BENCHMARK(BM_onednn_direct_conv)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_canopy_conv)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  JsonReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
}
