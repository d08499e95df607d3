// The GPU workloads (run on a machine with a GPU; elsewhere it says why and exits):
// W2 matmul f32/bf16 n = 1024...8192 through canopy next to cuBLAS called directly with the same
// settings (no TF32; bf16 on tensor cores), over half a second and (bf16) in the peers' burst, and W5's chain tanh(x*1.5 - 0.25)*0.75 jitted on the GPU (as its
// generated kernel and on the fused interpreter kernel) next to a device-to-device copy of the
// same bytes; W4's two convolutions (NHWC, HWIO, 3x3 SAME, batch 64)
// on cuDNN next to canopy's direct kernel; a dense layer's jitted backward pass (W3's first
// layer) with dw and db as one cuBLASLt call next to a matmul and a reduction; the jitted W3 (MLP
// SGD) and W4 (CNN SGD) steps on the GPU next to the same steps on the CPU in the same run, W9's
// Adam step as the trainer takes it on a GPU, and an embedding classifier's step (gathers and scatter-adds with indices on the device). Every timed
// iteration ends with the stream drained.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <canopy/canopy.hpp>
#include <canopy/kernels/cuda.hpp>
#include <canopy/kernels/cuda_graph.hpp>
#include <canopy/kernels/cuda_nn.hpp>
#include <canopy/train.hpp>

#include "../examples/fashion_mnist/model.hpp"
#include "../tests/helpers/embedding_classifier.hpp"
#include "w3_mlp.hpp"

using namespace canopy;

namespace {

const Device kGpu = Device::cuda(0);

Array on_gpu(const Shape& s, DType d, std::uint32_t seed) {
  return device_put(random::normal(random::key(seed), s).astype(d), kGpu);
}

// W2's operands as BENCHMARKS.md defines them and the peers draw them: entries U[-1, 1) (a tensor
// core's power, and so its clock, depends on the values it multiplies).
Array w2_operand(std::int64_t n, DType d, std::uint32_t seed) {
  return random::uniform(random::key(seed), {n, n}, DType::f32, -1.0f, 1.0f).astype(d);
}

void drain() { kernels::cuda::synchronize(0); }

// The timed loop of a step as the profiled range (ncu --profile-from-start off): the warm-up calls
// before it, which time cuDNN's and cuBLASLt's candidates, run unprofiled, so that ncu's
// serialised launches do not distort that choice and it reads the kernels the step runs.
struct ProfiledRange {
  explicit ProfiledRange(bool gpu) : gpu(gpu) {
    if (gpu) (void)cudaProfilerStart();
  }
  ~ProfiledRange() {
    if (gpu) (void)cudaProfilerStop();
  }
  bool gpu;
};

// How many CUDA graph replays each timed iteration of a step made (1: the step ran as one graph;
// 0: kernel by kernel, as with graphs off or a recording refused), and how many kernels a replay
// launches.
void count_graph_replays(benchmark::State& state, std::int64_t replays_before) {
  const auto iterations = static_cast<double>(std::max<benchmark::IterationCount>(state.iterations(), 1));
  state.counters["graph replays/step"] = static_cast<double>(kernels::cuda::graph_replays() - replays_before) / iterations;
  // What one replay launches: the step's kernels, as CUDA captured them (library calls included).
  if (kernels::cuda::graph_replays() > replays_before)
    state.counters["kernels/step"] = static_cast<double>(kernels::cuda::last_graph_kernels());
}

void matmul_canopy(benchmark::State& state, DType d) {
  const std::int64_t n = state.range(0);
  const Array a = device_put(w2_operand(n, d, 1), kGpu), b = device_put(w2_operand(n, d, 2), kGpu);
  (void)matmul(a, b);
  drain();
  for (auto _ : state) {
    benchmark::DoNotOptimize(matmul(a, b));
    drain();
  }
  state.counters["TFLOP/s"] = benchmark::Counter(2.0 * n * n * n * state.iterations() / 1e12, benchmark::Counter::kIsRate);
}

// The peer: one cublasGemmEx on buffers allocated here holding the same values, with the compute
// canopy asks for: pedantic f32 for f32 (no TF32), f32 accumulation on tensor cores for bf16 (as
// PyTorch and JAX compute bf16 products).
class CublasProduct {
 public:
  CublasProduct(std::int64_t n, DType d)
      : n_(static_cast<int>(n)), type_(d == DType::f32 ? CUDA_R_32F : CUDA_R_16BF),
        compute_(d == DType::f32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F) {
    const std::size_t bytes = static_cast<std::size_t>(n * n) * itemsize(d);
    cudaMalloc(&a_, bytes);
    cudaMalloc(&b_, bytes);
    cudaMalloc(&c_, bytes);
    // canopy's operands, not zeros (a tensor core's products of zeros run faster).
    const Array ha = w2_operand(n, d, 1), hb = w2_operand(n, d, 2);
    cudaMemcpy(a_, ha.raw_data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(b_, hb.raw_data(), bytes, cudaMemcpyHostToDevice);
    cublasCreate(&h_);
    cublasSetMathMode(h_, d == DType::f32 ? CUBLAS_PEDANTIC_MATH : CUBLAS_DEFAULT_MATH);
  }
  ~CublasProduct() {
    cublasDestroy(h_);
    cudaFree(a_);
    cudaFree(b_);
    cudaFree(c_);
  }
  CublasProduct(const CublasProduct&) = delete;
  CublasProduct& operator=(const CublasProduct&) = delete;
  /// One product, issued; then the device drained.
  void operator()() {
    const float one = 1, zero = 0;
    cublasGemmEx(h_, CUBLAS_OP_N, CUBLAS_OP_N, n_, n_, n_, &one, b_, type_, n_, a_, type_, n_, &zero, c_, type_, n_,
                 compute_, CUBLAS_GEMM_DEFAULT);
    cudaDeviceSynchronize();
  }

 private:
  int n_;
  cudaDataType_t type_;
  cublasComputeType_t compute_;
  cublasHandle_t h_{};
  void *a_ = nullptr, *b_ = nullptr, *c_ = nullptr;
};

void matmul_cublas(benchmark::State& state, DType d) {
  const std::int64_t n = state.range(0);
  CublasProduct product(n, d);
  product();
  for (auto _ : state) product();
  state.counters["TFLOP/s"] = benchmark::Counter(2.0 * n * n * n * state.iterations() / 1e12, benchmark::Counter::kIsRate);
}

// W2 timed as the peers' script times it (benchmarks/peers/gpu_peers.py: the median of 10 calls,
// each waited for, after 3 warm-up calls), from an idle GPU as theirs starts: a burst of about 20
// ms at n = 8192, where the loops above run products back to back for half a second. A GPU
// holds its boost clock through a burst and settles to its power limit over a sustained run, so
// the goals compare these figures with the peers', and the loops' figures are the sustained ones.
void w2_burst(benchmark::State& state, const std::function<void()>& product) {
  const std::int64_t n = state.range(0);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // idle, as between the peers' processes and cases
  for (int k = 0; k < 3; ++k) product();
  std::vector<double> seconds;
  for (auto _ : state) {
    seconds.clear();
    for (int k = 0; k < 10; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      product();
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = (seconds[4] + seconds[5]) / 2;
    state.SetIterationTime(median);
    state.counters["TFLOP/s"] = 2.0 * static_cast<double>(n * n * n) / median / 1e12;
  }
}

void matmul_canopy_burst(benchmark::State& state, DType d) {
  const std::int64_t n = state.range(0);
  const Array a = device_put(w2_operand(n, d, 1), kGpu), b = device_put(w2_operand(n, d, 2), kGpu);
  w2_burst(state, [&] {
    benchmark::DoNotOptimize(matmul(a, b));
    drain();
  });
}

void matmul_cublas_burst(benchmark::State& state, DType d) {
  CublasProduct product(state.range(0), d);
  w2_burst(state, [&] { product(); });
}

// W5 as its generated kernel (compiled by NVRTC at the first call, outside the timing) or on
// the fused interpreter kernel; `generated kernel` says which ran (1: every timed call).
void chain_jit(benchmark::State& state, bool generated) {
  const std::int64_t n = state.range(0);
  const Array x = on_gpu({n}, DType::f32, 3);
  const bool was = kernels::cuda::generated_kernels();
  kernels::cuda::set_generated_kernels(generated);
  auto f = jit([](const Array& v) { return tanh(v * 1.5f - 0.25f) * 0.75f; });
  (void)f(x);
  drain();
  const std::int64_t before = kernels::cuda::generated_kernel_calls();
  for (auto _ : state) {
    benchmark::DoNotOptimize(f(x));
    drain();
  }
  state.counters["GB/s"] = benchmark::Counter(8.0 * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.counters["generated kernel"] =
      static_cast<double>(kernels::cuda::generated_kernel_calls() - before) / static_cast<double>(state.iterations());
  kernels::cuda::set_generated_kernels(was);
}

// What the chain moves (4n bytes read, 4n written) as a plain device-to-device copy.
void copy_d2d(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  void *a, *b;
  cudaMalloc(&a, static_cast<std::size_t>(n) * 4);
  cudaMalloc(&b, static_cast<std::size_t>(n) * 4);
  for (auto _ : state) {
    cudaMemcpy(b, a, static_cast<std::size_t>(n) * 4, cudaMemcpyDeviceToDevice);
    cudaDeviceSynchronize();
  }
  state.counters["GB/s"] = benchmark::Counter(8.0 * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  cudaFree(a);
  cudaFree(b);
}

// W4's convolutions: (64, hw, hw, in) * (3, 3, in, out), on cuDNN or on the direct kernel.
void conv_w4(benchmark::State& state, bool cudnn) {
  const std::int64_t hw = state.range(0), in = state.range(1), out = state.range(2);
  const Array x = on_gpu({64, hw, hw, in}, DType::f32, 4), w = on_gpu({3, 3, in, out}, DType::f32, 5);
  const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"};
  kernels::cuda::set_use_cudnn(cudnn);
  const std::int64_t calls = kernels::cuda::cudnn_calls();
  auto conv = [&] { return conv_general_dilated(x, w, {1, 1}, "SAME", {}, {}, nhwc); };
  (void)conv();
  drain();
  for (auto _ : state) {
    benchmark::DoNotOptimize(conv());
    drain();
  }
  kernels::cuda::set_use_cudnn(true);
  // Calls that ran on cuDNN per iteration: 1 on the cuDNN path (0 would mean it fell back).
  state.counters["cudnn_calls"] =
      static_cast<double>(kernels::cuda::cudnn_calls() - calls) / static_cast<double>(state.iterations() + 1);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * 64 * hw * hw * out * in * 9 * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// W3's first layer backwards (x 128x784, w 784x512): dw = x^T @ g and db = sum(g, 0) for a loss
// linear in the layer's output (so the forward matmul is dead code), jitted on the GPU with
// epilogue fusion on (one cuBLASLt matmul with its bias-gradient epilogue) or off (a cuBLAS matmul
// and a reduction kernel). Fusion is read when the program is built, at the first call.
void dense_backward(benchmark::State& state, bool fused) {
  const Array x = on_gpu({128, 784}, DType::f32, 1), w = on_gpu({784, 512}, DType::f32, 2);
  const Array b = on_gpu({512}, DType::f32, 3), y = on_gpu({128, 512}, DType::f32, 4);
  auto loss = [](const Array& w, const Array& b, const Array& x, const Array& y) { return sum((matmul(x, w) + b) * y); };
  auto step = jit(grad(loss, argnums<0, 1>));
  set_epilogue_fusion(fused);
  (void)step(w, b, x, y);
  set_epilogue_fusion(true);
  drain();
  for (auto _ : state) {
    benchmark::DoNotOptimize(step(w, b, x, y));
    drain();
  }
}

/// How a GPU step runs: as one CUDA graph or kernel by kernel (set_device_graphs), its state
/// donated (the update in place) or not.
struct GpuStep {
  bool graphs = true, donate = false;
};

// W3: the jitted SGD step of the MLP at batch 128, its state and batch on the GPU or the CPU.
void w3_step(benchmark::State& state, bool gpu, GpuStep how) {
  w3::Mlp m = w3::make_mlp();
  w3::Batch b = w3::make_batch(128);
  if (gpu) {
    m = device_put(m, kGpu);
    b = {device_put(b.x, kGpu), device_put(b.onehot, kGpu)};
  }
  auto plain = jit(w3::sgd_step);
  auto donating = jit(w3::sgd_step, donate_argnums<0>);
  auto step = [&](const w3::Mlp& p) { return how.donate ? donating(p, b.x, b.onehot) : plain(p, b.x, b.onehot); };
  set_device_graphs(how.graphs);
  m = step(m);
  m = step(m);  // a graph is recorded at the second call
  drain();
  const std::int64_t replays = kernels::cuda::graph_replays();
  {
    const ProfiledRange profiled(gpu);
    for (auto _ : state) {
      m = step(m);
      if (gpu) drain();
      else benchmark::DoNotOptimize(m[2].b.data<float>());
    }
  }
  if (gpu) count_graph_replays(state, replays);
  set_device_graphs(true);
}

// The embedding classifier's jitted SGD step (tests/helpers/embedding_classifier.hpp): a gather of
// 128 x 16 rows of a 1000 x 64 table, tokens repeating, and the gradient's scatter-add of them. On
// the GPU the indices stay on the device and the scatter-add sums duplicates in the CPU's order.
void embedding_step(benchmark::State& state, bool gpu) {
  test::EmbeddingClassifier m{random::normal(random::key(1), {1000, 64}), random::normal(random::key(2), {64, 10})};
  Array tokens = random::randint(random::key(3), {128, 16}, 0, 1000, DType::i32);
  Array labels = random::randint(random::key(4), {128}, 0, 10, DType::i32);
  if (gpu) {
    m = device_put(m, kGpu);
    tokens = device_put(tokens, kGpu);
    labels = device_put(labels, kGpu);
  }
  auto step = jit(test::embedding_sgd, donate_argnums<0>);
  m = step(m, tokens, labels);
  m = step(m, tokens, labels);  // a graph is recorded at the second call
  if (gpu) drain();
  const std::int64_t replays = kernels::cuda::graph_replays();
  for (auto _ : state) {
    m = step(m, tokens, labels);
    if (gpu) drain();
    else benchmark::DoNotOptimize(m.w.data<float>());
  }
  if (gpu) count_graph_replays(state, replays);
}

// W4: the jitted SGD step of the examples' CNN at batch 64 (random images and labels).
void w4_step(benchmark::State& st, bool gpu, GpuStep how) {
  using Data = ImageClassification;
  auto tx = optim::sgd(0.01);
  auto state = init_train_state(fashion_mnist::Cnn::init(random::key(0)), tx, random::key(1));
  auto loss = [](const fashion_mnist::Cnn& p, const Data& b, const Array&) {
    return fashion_mnist::cross_entropy(p(b.images), b.labels);
  };
  auto plain = jit(make_train_step(loss, tx));
  auto donating = jit(make_train_step(loss, tx), donate_argnums<0>);
  Data batch{random::uniform(random::key(2), {64, 784}), random::randint(random::key(3), {64}, 0, 10)};
  if (gpu) {
    state = device_put(state, kGpu);
    batch = device_put(batch, kGpu);
  }
  auto step = [&](const auto& s) { return how.donate ? donating(s, batch) : plain(s, batch); };
  set_device_graphs(how.graphs);
  state = std::get<0>(step(state));
  state = std::get<0>(step(state));  // a graph is recorded at the second call
  drain();
  const std::int64_t replays = kernels::cuda::graph_replays();
  {
    const ProfiledRange profiled(gpu);
    for (auto _ : st) {
      auto [next, info] = step(state);
      state = std::move(next);
      if (gpu) drain();
      else benchmark::DoNotOptimize(info.loss.item<float>());
    }
  }
  if (gpu) count_graph_replays(st, replays);
  set_device_graphs(true);
}

// W9's step as the trainer takes it on a GPU: the Fashion-MNIST MLP's Adam step, its state donated,
// each batch of 128 a view of an epoch of a data set held on the device (here 40 batches of
// synthetic images, taken in turn), replayed as one graph whose edges copy the batch in.
void w9_step(benchmark::State& st) {
  using Data = ImageClassification;
  auto tx = optim::adam(1e-3);
  auto state = device_put(init_train_state(fashion_mnist::Mlp::init(random::key(0)), tx, random::key(1)), kGpu);
  auto loss = [](const fashion_mnist::Mlp& p, const Data& b, const Array&) {
    return fashion_mnist::cross_entropy(p(b.images), b.labels);
  };
  auto step = jit(make_train_step(loss, tx), donate_argnums<0>);
  const DeviceDataset<Data> data(Data{random::uniform(random::key(2), {40 * 128, 784}), random::randint(random::key(3), {40 * 128}, 0, 10)},
                                 kGpu);
  const DeviceBatches<Data> epoch = data.epoch(128, random::key(4));
  std::int64_t i = 0;
  state = std::get<0>(step(state, epoch[i++]));
  state = std::get<0>(step(state, epoch[i++]));  // a graph is recorded at the second call
  drain();
  const std::int64_t replays = kernels::cuda::graph_replays();
  {
    const ProfiledRange profiled(true);
    for (auto _ : st) {
      state = std::get<0>(step(state, epoch[i++ % epoch.size()]));
      drain();
    }
  }
  count_graph_replays(st, replays);
}

}  // namespace

int main(int argc, char** argv) {
  if (devices("cuda").empty()) {
    std::printf("bench_gpu: no GPU: %s\n", gpu_unavailable_reason().c_str());
    return 0;
  }
  for (DType d : {DType::f32, DType::bf16}) {
    const std::string suffix = d == DType::f32 ? "f32" : "bf16";
    benchmark::RegisterBenchmark(("w2_matmul_canopy/" + suffix).c_str(), matmul_canopy, d)
        ->RangeMultiplier(2)->Range(1024, 8192)->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("w2_matmul_cublas/" + suffix).c_str(), matmul_cublas, d)
        ->RangeMultiplier(2)->Range(1024, 8192)->UseRealTime()->Unit(benchmark::kMillisecond);
  }
  using Product = void (*)(benchmark::State&, DType);
  const std::pair<const char*, Product> bursts[] = {{"w2_matmul_canopy_burst/bf16", matmul_canopy_burst},
                                                    {"w2_matmul_cublas_burst/bf16", matmul_cublas_burst}};
  for (const auto& [name, run] : bursts)
    benchmark::RegisterBenchmark(name, run, DType::bf16)
        ->Arg(2048)->Arg(4096)->Arg(8192)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
  for (bool generated : {true, false})
    benchmark::RegisterBenchmark(generated ? "w5_chain_jit/generated" : "w5_chain_jit/interpreter", chain_jit, generated)
        ->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();
  benchmark::RegisterBenchmark("w5_copy_d2d", copy_d2d)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();
  for (bool cudnn : {true, false})
    benchmark::RegisterBenchmark(cudnn ? "w4_conv/cudnn" : "w4_conv/direct", conv_w4, cudnn)
        ->Args({28, 1, 32})->Args({14, 32, 64})->UseRealTime()->Unit(benchmark::kMicrosecond);
  for (bool fused : {true, false})
    benchmark::RegisterBenchmark(fused ? "dense_backward/bias_grad_epilogue" : "dense_backward/matmul_and_sum",
                                 dense_backward, fused)
        ->UseRealTime()->Unit(benchmark::kMicrosecond);
  // The steps on the GPU: as one CUDA graph (by default), donated or not, and kernel by kernel.
  const std::pair<const char*, GpuStep> ways[] = {
      {"gpu", {}}, {"gpu_donated", {.graphs = true, .donate = true}}, {"gpu_kernel_by_kernel", {.graphs = false}}};
  for (const auto& [name, how] : ways) {
    benchmark::RegisterBenchmark((std::string("w3_mlp_step/") + name).c_str(), w3_step, true, how)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("w4_cnn_step/") + name).c_str(), w4_step, true, how)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
  }
  for (bool gpu : {true, false})
    benchmark::RegisterBenchmark(gpu ? "embedding_step/gpu" : "embedding_step/cpu", embedding_step, gpu)
        ->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("w9_adam_step/gpu_donated", w9_step)->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("w3_mlp_step/cpu", w3_step, false, GpuStep{})->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("w4_cnn_step/cpu", w4_step, false, GpuStep{})->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
