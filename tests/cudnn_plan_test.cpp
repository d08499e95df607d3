// cuDNN's plans built here, without a GPU: cuDNN 9.8+ finalizes heuristics and execution plans
// for a device-properties descriptor, so the CPU suite runs the graph construction, engine
// filtering and plan finalization of kernels/cuda/cudnn_conv.cpp for an H100. A GPU run builds
// the same graph bound to its handle instead; that and the execution need the GPU
// (tests/gpu/gpu_test.cpp). Built where cuDNN is found.
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include <canopy/kernels/nn_geometry.hpp>

#include "helpers/gradient_convolutions.hpp"
#include "helpers/conv_cases.hpp"
#include "../kernels/cuda/cudnn_conv.hpp"

using namespace canopy;
using kernels::ConvGeometry;
namespace cudnn = canopy::kernels::cuda::cudnn;

namespace {

// An H100 SXM5 80GB as cudaGetDeviceProperties describes it (NVIDIA's published figures), in
// cuDNN's device-properties JSON. deviceVer is the compute capability times 100.
constexpr const char* kH100 = R"({"maxGridSize":[2147483647,65535,65535],"maxBlockSize":[1024,1024,64],
"regsPerBlock":65536,"multiProcessorCount":132,"warpSize":32,"maxSharedMemoryPerBlock":49152,
"maxSharedMemoryPerBlockOptin":232448,"reservedSharedMemoryPerBlock":1024,"maxRegistersPerSM":65536,"maxCtasPerSM":32,
"maxThreadsPerBlock":1024,"maxThreadsPerSM":2048,"pciDeviceId":9008,"isTccDriver":0,"supportCoopLaunch":1,
"smClockRateKHz":1980000,"memClockRateKHz":2619000,"l2CacheSize":52428800,"totalGlobalMem":85020000256,
"deviceName":"NVIDIA H100 80GB HBM3","cudaDeviceId":0,"deviceVer":900,"driverVer":13000})";

cudnn::Target h100() {
  static const cudnn::Descriptor d = cudnn::device_properties_from_json(kH100);
  return {nullptr, &d};
}

using Dims = std::vector<std::int64_t>;

using canopy::test::strides_in;

struct Conv {
  std::string what;
  std::int64_t batch, in, out, groups;
  Dims size, window, strides, lo, hi, lhs_dil, rhs_dil;
  bool channels_last;
  bool hwio = false;  ///< rhs as (spatial..., I, O), lax's and the examples' kernel layout
};

ConvGeometry geometry(const Conv& c) {
  ConvGeometry g;
  g.batch = c.batch;
  g.in_features = c.in;
  g.out_features = c.out;
  g.groups = c.groups;
  g.in_size = c.size;
  g.window = c.window;
  g.strides = c.strides;
  g.pad_lo = c.lo;
  g.pad_hi = c.hi;
  g.lhs_dilation = c.lhs_dil;
  g.rhs_dilation = c.rhs_dil;
  Dims l = {c.batch, c.in}, r = {c.out, c.in / c.groups}, o = {c.batch, c.out};
  for (std::size_t d = 0; d < c.size.size(); ++d) {
    const std::int64_t padded = (c.size[d] - 1) * c.lhs_dil[d] + 1 + c.lo[d] + c.hi[d];
    g.out_size.push_back((padded - ((c.window[d] - 1) * c.rhs_dil[d] + 1)) / c.strides[d] + 1);
    l.push_back(c.size[d]);
    r.push_back(c.window[d]);
    o.push_back(g.out_size.back());
  }
  std::vector<int> order(l.size()), last(l.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  last = order;
  last.erase(last.begin() + 1);
  last.push_back(1);  // (N, spatial..., C) / (O, spatial..., I)
  const auto& layout = c.channels_last ? last : order;
  std::vector<int> hwio(order.begin() + 2, order.end());
  hwio.push_back(1);
  hwio.push_back(0);
  g.lhs_strides = strides_in(l, layout);
  g.rhs_strides = strides_in(r, c.hwio ? hwio : layout);
  g.out_strides = strides_in(o, layout);
  return g;
}

std::vector<Conv> convs() {
  const Dims one2{1, 1}, zero2{0, 0};
  return {
      {"3x3 same, NCHW", 8, 16, 32, 1, {28, 28}, {3, 3}, one2, one2, one2, one2, one2, false},
      {"3x3 same, NHWC", 8, 16, 32, 1, {28, 28}, {3, 3}, one2, one2, one2, one2, one2, true},
      {"fashion_mnist conv 1 (NHWC, HWIO, 1 -> 32)", 128, 1, 32, 1, {28, 28}, {3, 3}, one2, one2, one2, one2, one2, true, true},
      {"fashion_mnist conv 2 (NHWC, HWIO, 32 -> 64)", 128, 32, 64, 1, {14, 14}, {3, 3}, one2, one2, one2, one2, one2, true, true},
      {"strided 2, valid", 4, 8, 8, 1, {17, 17}, {3, 3}, {2, 2}, zero2, zero2, one2, one2, false},
      {"rhs dilated 2", 2, 4, 6, 1, {16, 16}, {3, 3}, one2, {2, 2}, {2, 2}, one2, {2, 2}, true},
      {"depthwise (groups = channels)", 4, 16, 16, 16, {14, 14}, {3, 3}, one2, one2, one2, one2, one2, true},
      {"grouped (4 groups)", 2, 16, 32, 4, {10, 10}, {3, 3}, one2, one2, one2, one2, one2, false},
      {"asymmetric padding", 2, 3, 5, 1, {9, 7}, {3, 2}, one2, {2, 0}, {0, 1}, one2, one2, false},
      {"negative padding (cropped)", 2, 3, 5, 1, {9, 9}, {3, 3}, one2, {-1, 1}, {1, -2}, one2, one2, true},
      {"input gradient of a stride-2 conv (lhs dilated)", 4, 8, 8, 1, {8, 8}, {3, 3}, one2, {2, 2}, {2, 2}, {2, 2}, one2, true},
      {"a window as large as the input (in NCHW: a forward convolution)", 8, 4, 8, 1, {28, 28}, {28, 28}, one2, one2, one2, one2, one2, false},
      {"1-D, NWC", 4, 8, 16, 1, {50}, {5}, {1}, {2}, {2}, {1}, {1}, true},
      {"1-D, NCW, strided", 4, 8, 16, 1, {50}, {4}, {2}, {0}, {0}, {1}, {1}, false},
      {"3-D, NCDHW", 2, 4, 8, 1, {6, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, false},
      {"3-D, NDHWC", 2, 4, 8, 1, {6, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true},
  };
}

}  // namespace

TEST_CASE("cudnn plans: every form of the convolutions canopy hands cuDNN gets an execution plan for an H100") {
  int backward_data = 0;
  for (const Conv& c : convs()) {
    const ConvGeometry g = geometry(c);
    const auto calls = cudnn::conv_calls(g);
    CAPTURE(c.what);
    REQUIRE(!calls.empty());
    for (const cudnn::ConvCall& call : calls) {
      CAPTURE(static_cast<int>(call.kind));
      backward_data += call.kind == cudnn::ConvKind::backward_data;
      for (DType d : {DType::f32, DType::bf16, DType::f16}) {
        CAPTURE(name(d));
        const auto plan = cudnn::build_conv_plan(call, d, 16, h100());
        REQUIRE(plan);
        CHECK(plan->engine >= 0);
        CHECK(plan->workspace_bytes >= 0);
      }
    }
  }
  CHECK(backward_data >= 1);  // lhs dilated: the next case has the filter gradients, in their layouts
}

TEST_CASE("cudnn plans: the CNN's gradient convolutions get backward-data and backward-filter plans") {
  // W4 (batch 64, NHWC/HWIO): conv 1 -> 32 at 28x28 and 32 -> 64 at 14x14, and a stride-2 layer.
  const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"};
  struct Layer {
    Dims x, w, strides;
  };
  const Layer layers[] = {{{64, 28, 28, 1}, {3, 3, 1, 32}, {1, 1}},
                          {{64, 14, 14, 32}, {3, 3, 32, 64}, {1, 1}},
                          {{64, 14, 14, 32}, {3, 3, 32, 64}, {2, 2}}};
  int kinds[3] = {};
  for (const Layer& l : layers) {
    const Array x = zeros(Shape(l.x)), w = zeros(Shape(l.w));
    for (const ConvGeometry& g : test::gradient_convolutions(x, w, l.strides, "SAME", nhwc, 1)) {
      const cudnn::ConvCall call = cudnn::conv_calls(g).front();
      ++kinds[static_cast<int>(call.kind)];
      for (DType d : {DType::f32, DType::bf16}) {
        const auto plan = cudnn::build_conv_plan(call, d, 16, h100());
        CAPTURE(static_cast<int>(call.kind));
        CAPTURE(name(d));
        REQUIRE(plan);
        MESSAGE("x " << test::text(call.x.dims) << " w " << test::text(call.w.dims) << " kind "
                     << static_cast<int>(call.kind) << " " << name(d) << ": engine " << plan->engine);
      }
    }
  }
  CHECK(kinds[static_cast<int>(cudnn::ConvKind::forward)] == 5);  // 3 forwards, 2 stride-1 input gradients
  CHECK(kinds[static_cast<int>(cudnn::ConvKind::backward_data)] == 1);
  CHECK(kinds[static_cast<int>(cudnn::ConvKind::backward_filter)] == 3);
}

bool has_note(const cudnn::ConvPlan& plan, cudnnBackendNumericalNote_t note) {
  for (auto n : plan.notes)
    if (n == note) return true;
  return false;
}

TEST_CASE("cudnn plans: deterministic engines, and none computing f32 on tensor cores (TF32)") {
  // The heuristics rank TF32 tensor-core engines first for NHWC f32: the plans must be others.
  int tensor_core_f16 = 0;
  for (const Conv& c : convs()) {
    const auto calls = cudnn::conv_calls(geometry(c));
    REQUIRE(!calls.empty());
    CAPTURE(c.what);
    for (DType d : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
      CAPTURE(name(d));
      const auto plan = cudnn::build_conv_plan(calls.front(), d, 16, h100());
      if (!plan) {
        CHECK(d == DType::f64);  // double convolutions are cuDNN's legacy engines': not all shapes
        continue;
      }
      CHECK_FALSE(has_note(*plan, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC));
      CHECK_FALSE(has_note(*plan, CUDNN_NUMERICAL_NOTE_FFT));
      CHECK_FALSE(has_note(*plan, CUDNN_NUMERICAL_NOTE_WINOGRAD));
      if (d == DType::f32 || d == DType::f64) {
        CHECK_FALSE(has_note(*plan, CUDNN_NUMERICAL_NOTE_TENSOR_CORE));
        CHECK_FALSE(has_note(*plan, CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS));
      }
      tensor_core_f16 += d == DType::f16 && has_note(*plan, CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
    }
  }
  CHECK(tensor_core_f16 > 0);  // half precision keeps its tensor cores
}

TEST_CASE("cudnn plans: f32 at Precision::high may take the TF32 tensor-core engines, at highest and default never") {
  // The heuristics rank TF32 engines first for NHWC f32 on an H100: at `high` some plan takes one.
  int tensor_core_high = 0, planned = 0;
  for (const Conv& c : convs()) {
    const auto calls = cudnn::conv_calls(geometry(c));
    REQUIRE(!calls.empty());
    CAPTURE(c.what);
    for (Precision p : {Precision::default_, Precision::highest, Precision::high}) {
      const std::string_view precision = to_string(p);
      CAPTURE(precision);
      const auto plan = cudnn::build_conv_plan(calls.front(), DType::f32, 16, h100(), p);
      REQUIRE(plan);
      CHECK_FALSE(has_note(*plan, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC));
      CHECK_FALSE(has_note(*plan, CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION));
      if (p != Precision::high) {
        CHECK_FALSE(has_note(*plan, CUDNN_NUMERICAL_NOTE_TENSOR_CORE));
        CHECK_FALSE(has_note(*plan, CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS));
      } else {
        ++planned;
        tensor_core_high += has_note(*plan, CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
      }
    }
    // f64 never computes on tensor cores, whatever the precision.
    if (const auto plan = cudnn::build_conv_plan(calls.front(), DType::f64, 16, h100(), Precision::high))
      CHECK_FALSE(has_note(*plan, CUDNN_NUMERICAL_NOTE_TENSOR_CORE));
  }
  MESSAGE(tensor_core_high << " of " << planned << " f32 convolutions at high take a tensor-core engine");
  CHECK(tensor_core_high > 0);
}

TEST_CASE("cudnn plans: operands aligned to their element only still get plans") {
  // A view into a buffer can start anywhere a multiple of its itemsize.
  const auto calls = cudnn::conv_calls(geometry(convs()[0]));
  REQUIRE(!calls.empty());
  CHECK(cudnn::build_conv_plan(calls.front(), DType::f32, 4, h100()));
  CHECK(cudnn::build_conv_plan(calls.front(), DType::bf16, 2, h100()));
}

TEST_CASE("cudnn plans: integer dtypes get none (the direct kernel's error path is the primitive's)") {
  const auto calls = cudnn::conv_calls(geometry(convs()[0]));
  REQUIRE(!calls.empty());
  CHECK_FALSE(cudnn::build_conv_plan(calls.front(), DType::i32, 16, h100()));
}

TEST_CASE("cudnn plans: a convolution and its bias as one graph (forward, pointwise add) get plans for an H100") {
  // W4's two layers (batch 64, NHWC/HWIO), as jit's GPU pass hands them to cuDNN.
  const Dims one2{1, 1};
  const Conv w4[] = {
      {"W4 conv 1 (1 -> 32 at 28x28)", 64, 1, 32, 1, {28, 28}, {3, 3}, one2, one2, one2, one2, one2, true, true},
      {"W4 conv 2 (32 -> 64 at 14x14)", 64, 32, 64, 1, {14, 14}, {3, 3}, one2, one2, one2, one2, one2, true, true}};
  for (const Conv& c : w4) {
    CAPTURE(c.what);
    const auto calls = cudnn::conv_calls(geometry(c));
    REQUIRE(!calls.empty());
    REQUIRE(calls.front().kind == cudnn::ConvKind::forward);
    for (DType d : {DType::f32, DType::bf16}) {
      CAPTURE(name(d));
      const auto plan = cudnn::build_conv_bias_plan(calls.front(), d, 16, h100());
      REQUIRE(plan);
      CHECK(plan->engine >= 0);
      CHECK_FALSE(has_note(*plan, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC));
      if (d == DType::f32) CHECK_FALSE(has_note(*plan, CUDNN_NUMERICAL_NOTE_TENSOR_CORE));
      MESSAGE(c.what << " + bias, " << name(d) << ": engine " << plan->engine);
    }
  }
  // Every forward form the unfused path plans (layouts, strides, dilations, groups, padding,
  // 1-D and 3-D) takes its bias into the graph too, in the three dtypes.
  for (const Conv& c : convs()) {
    const auto calls = cudnn::conv_calls(geometry(c));
    if (calls.empty() || calls.front().kind != cudnn::ConvKind::forward) continue;
    CAPTURE(c.what);
    for (DType d : {DType::f32, DType::bf16, DType::f16}) {
      CAPTURE(name(d));
      CHECK(cudnn::build_conv_bias_plan(calls.front(), d, 16, h100()));
    }
  }
}

TEST_CASE("cudnn plans: no fused bias graph for f64 or a gradient convolution") {
  const auto calls = cudnn::conv_calls(geometry(convs()[0]));
  REQUIRE(!calls.empty());
  CHECK_FALSE(cudnn::build_conv_bias_plan(calls.front(), DType::f64, 16, h100()));
  for (const Conv& c : convs()) {
    const auto forms = cudnn::conv_calls(geometry(c));
    for (const cudnn::ConvCall& call : forms)
      if (call.kind != cudnn::ConvKind::forward) CHECK_FALSE(cudnn::build_conv_bias_plan(call, DType::f32, 16, h100()));
  }
}

TEST_CASE("cudnn plans: autotuning times the heuristics' first accepted plans and keeps the fastest") {
  // W4's gradient convolutions (whose heuristic plans ran slowly on an H200), timed by fake timers:
  // the choice among the candidates, not the GPU's clock, is what runs here.
  const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"};
  const Array x = zeros(Shape{64, 14, 14, 32}), w = zeros(Shape{3, 3, 32, 64});
  int several = 0;
  for (const ConvGeometry& g : test::gradient_convolutions(x, w, {1, 1}, "SAME", nhwc, 1))
    for (DType d : {DType::f32, DType::bf16}) {
      const cudnn::ConvCall call = cudnn::conv_calls(g).front();
      CAPTURE(static_cast<int>(call.kind));
      CAPTURE(name(d));
      const auto heuristic = cudnn::build_conv_plan(call, d, 16, h100());
      REQUIRE(heuristic);
      CHECK_FALSE(heuristic->timed);
      // Every candidate is timed once, in the heuristics' order, each an accepted engine.
      std::vector<std::int64_t> timed;
      const cudnn::PlanTimer record = [&](const cudnn::ConvPlan& p) {
        CHECK_FALSE(has_note(p, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC));
        if (d == DType::f32) CHECK_FALSE(has_note(p, CUDNN_NUMERICAL_NOTE_TENSOR_CORE));
        timed.push_back(p.engine);
        return 1.0;  // all tie: the heuristics' first is kept
      };
      const auto tied = cudnn::build_conv_plan(call, d, 16, h100(), Precision::default_, &record);
      REQUIRE(tied);
      CHECK(tied->timed);
      CHECK(tied->engine == heuristic->engine);
      CHECK(timed.size() <= cudnn::kAutotuneCandidates);
      if (timed.size() < 2) continue;  // one candidate: nothing to choose, nothing timed
      ++several;
      CHECK(timed.front() == heuristic->engine);
      // The last candidate fastest: it is kept.
      std::size_t k = 0;
      const cudnn::PlanTimer last_fastest = [&](const cudnn::ConvPlan&) { return k++ + 1 == timed.size() ? 0.5 : 2.0; };
      const auto chosen = cudnn::build_conv_plan(call, d, 16, h100(), Precision::default_, &last_fastest);
      REQUIRE(chosen);
      CHECK(chosen->engine == timed.back());
      // Near ties stay with the heuristics' first (the same engine in every run): 3% faster is
      // not enough, 10% is.
      for (const double other : {0.97, 0.9}) {
        std::size_t calls = 0;
        const cudnn::PlanTimer near = [&](const cudnn::ConvPlan&) { return calls++ == 0 ? 1.0 : other; };
        const auto kept = cudnn::build_conv_plan(call, d, 16, h100(), Precision::default_, &near);
        REQUIRE(kept);
        // All others tie at `other`: the first of them (the second candidate) when it wins.
        CHECK(kept->engine == timed[other > 1.0 - cudnn::kAutotuneMargin ? 0 : 1]);
      }
      // None runs (+inf): the heuristics' first.
      const cudnn::PlanTimer none = [](const cudnn::ConvPlan&) { return std::numeric_limits<double>::infinity(); };
      CHECK(cudnn::build_conv_plan(call, d, 16, h100(), Precision::default_, &none)->engine == heuristic->engine);
      MESSAGE("kind " << static_cast<int>(call.kind) << " " << name(d) << ": " << timed.size() << " candidates");
    }
  CHECK(several > 0);  // some of these have a choice to make
}
