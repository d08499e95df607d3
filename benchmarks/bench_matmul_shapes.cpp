// The matmuls of the W3/W9 step (batch 128, 784-512-512-10), each as the step runs it, next to the
// machine's f32 FMA peak measured in the same run, GFLOP/s = 2mkn/t:
//   canopy       the step's kernel (matmul_f32_transposed: oneDNN, plain layouts, operands read
//                in place through their strides)
//   blocked      oneDNN with its own (blocked) layout for the weights operand, reordered once
//                outside the timed loop, as a weight could be between steps
//   any          oneDNN choosing every layout, the activations' reorders inside the loop
//   libxsmm      Debian's libxsmm 1.17 (libxsmm_sgemm_omp: its JIT kernels over OpenMP tiles)
// Run with OMP_NUM_THREADS=1 for per-core figures, 2 for the machine's.
#include <immintrin.h>
#include <omp.h>

#include <cstring>
#include <vector>

#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <canopy/canopy.hpp>
#include <canopy/kernels/cpu.hpp>

#include "uniform_data.hpp"

#if CANOPY_BENCH_LIBXSMM
#include <libxsmm.h>
#endif

namespace {

struct Shape {
  const char* name;
  std::int64_t m, k, n;
  bool trans_a, trans_b;
};
// C[m,n] = op(A) op(B), op(A) [m,k]: as the step's dot_generals (trans_a: A stored [k,m]).
const Shape kShapes[] = {
    {"fwd1 x.W1 128x784x512", 128, 784, 512, false, false},
    {"fwd2 h.W2 128x512x512", 128, 512, 512, false, false},
    {"fwd3 h.W3 128x512x10", 128, 512, 10, false, false},
    {"dW3 h^T.g 512x128x10", 512, 128, 10, true, false},
    {"dh2 g.W3^T 128x10x512", 128, 10, 512, false, true},
    {"dW2 h^T.g 512x128x512", 512, 128, 512, true, false},
    {"dh1 g.W2^T 128x512x512", 128, 512, 512, false, true},
    {"dW1 x^T.g 784x128x512", 784, 128, 512, true, false},
};

void report(benchmark::State& st, const Shape& s) {
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(s.m) * double(s.k) * double(s.n) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(s.name);
}

/// The f32 FMA peak: independent AVX-512 FMA chains in registers on every OpenMP thread (each
/// thread 2^24 FMAs of 16 lanes, 2 flops each).
__attribute__((target("avx512f"))) void fma_chains(float* sink) {
#pragma omp parallel
  {
    __m512 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i + omp_get_thread_num()));
    const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.0001f);
    for (int r = 0; r < (1 << 24) / 12; ++r)
      for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    __m512 t = acc[0];
    for (int i = 1; i < 12; ++i) t = _mm512_add_ps(t, acc[i]);
    _mm512_storeu_ps(sink + omp_get_thread_num() * 16, t);
  }
}

void BM_fma_peak(benchmark::State& st) {
  if (!__builtin_cpu_supports("avx512f")) {
    st.SkipWithError("no AVX-512");
    return;
  }
  std::vector<float> sink(16 * 64);
  for (auto _ : st) {
    fma_chains(sink.data());
    benchmark::DoNotOptimize(sink.data());
  }
  const double flops = 2.0 * 16 * double((1 << 24) / 12 * 12) * omp_get_max_threads();
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_canopy(benchmark::State& st) {
  const Shape& s = kShapes[st.range(0)];
  const auto a = uniform(s.m * s.k, 1), b = uniform(s.k * s.n, 2);
  std::vector<float> c(static_cast<std::size_t>(s.m * s.n));
  for (auto _ : st) {
    canopy::kernels::cpu::matmul_f32_transposed(a.data(), b.data(), c.data(), 1, s.m, s.k, s.n, s.trans_a, s.trans_b);
    benchmark::DoNotOptimize(c.data());
  }
  report(st, s);
}

using tag = dnnl::memory::format_tag;
dnnl::memory::desc plain(std::int64_t rows, std::int64_t cols, bool transposed) {
  return {{rows, cols}, dnnl::memory::data_type::f32, transposed ? tag::ba : tag::ab};
}

/// range(1): 0 weights (B) in oneDNN's layout, reordered once; 1 every layout `any`, the
/// reorders of A and B inside the loop.
void BM_onednn_layouts(benchmark::State& st) {
  const Shape& s = kShapes[st.range(0)];
  const bool all_any = st.range(1) == 1;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const auto f32 = dnnl::memory::data_type::f32;
  const dnnl::memory::desc a_user = plain(s.m, s.k, s.trans_a), b_user = plain(s.k, s.n, s.trans_b),
                           c_md = plain(s.m, s.n, false);
  const dnnl::memory::desc a_any({s.m, s.k}, f32, tag::any), b_any({s.k, s.n}, f32, tag::any);
  dnnl::matmul::primitive_desc pd({all_any ? a_any : a_user, b_any, c_md}, eng);
  auto a = uniform(s.m * s.k, 1), b = uniform(s.k * s.n, 2);
  std::vector<float> c(static_cast<std::size_t>(s.m * s.n));
  dnnl::memory a_mem(a_user, eng, a.data()), b_mem(b_user, eng, b.data()), c_mem(c_md, eng, c.data());
  dnnl::memory a_run = pd.src_desc() == a_user ? a_mem : dnnl::memory(pd.src_desc(), eng);
  dnnl::memory b_run = pd.weights_desc() == b_user ? b_mem : dnnl::memory(pd.weights_desc(), eng);
  std::optional<dnnl::reorder> ra, rb;
  if (a_run != a_mem) ra.emplace(a_mem, a_run);
  if (b_run != b_mem) rb.emplace(b_mem, b_run);
  if (rb) rb->execute(strm, b_mem, b_run);  // once: a weight kept in this layout between steps
  dnnl::matmul mm(pd);
  for (auto _ : st) {
    if (all_any && ra) ra->execute(strm, a_mem, a_run);
    if (all_any && rb) rb->execute(strm, b_mem, b_run);
    mm.execute(strm, {{DNNL_ARG_SRC, a_run}, {DNNL_ARG_WEIGHTS, b_run}, {DNNL_ARG_DST, c_mem}});
    strm.wait();
    benchmark::DoNotOptimize(c.data());
  }
  report(st, s);
  st.SetLabel(std::string(s.name) + (all_any ? " any (reorders in loop)" : rb ? " blocked weights" : " plain weights"));
}

#if CANOPY_BENCH_LIBXSMM
/// libxsmm computes column-major C = op(A) op(B); a row-major C[m,n] is the column-major C^T
/// [n,m] = op(B)^T op(A)^T, so the operands swap and keep their own transposes.
void BM_libxsmm(benchmark::State& st) {
  const Shape& s = kShapes[st.range(0)];
  const auto a = uniform(s.m * s.k, 1), b = uniform(s.k * s.n, 2);
  std::vector<float> c(static_cast<std::size_t>(s.m * s.n));
  const char ta = s.trans_b ? 'T' : 'N', tb = s.trans_a ? 'T' : 'N';
  const libxsmm_blasint m = s.n, n = s.m, k = s.k;
  const libxsmm_blasint lda = s.trans_b ? s.k : s.n, ldb = s.trans_a ? s.m : s.k, ldc = s.n;
  const float alpha = 1, beta = 0;
  libxsmm_init();
  for (auto _ : st) {
    libxsmm_sgemm_omp(&ta, &tb, &m, &n, &k, &alpha, b.data(), &lda, a.data(), &ldb, &beta, c.data(), &ldc);
    benchmark::DoNotOptimize(c.data());
  }
  report(st, s);
}
#endif

void shapes(benchmark::internal::Benchmark* b) {
  for (int i = 0; i < static_cast<int>(std::size(kShapes)); ++i) b->Arg(i);
}
void shapes_and_layouts(benchmark::internal::Benchmark* b) {
  for (int i = 0; i < static_cast<int>(std::size(kShapes)); ++i) b->Args({i, 0})->Args({i, 1});
}

}  // namespace

BENCHMARK(BM_fma_peak)->UseRealTime();
BENCHMARK(BM_canopy)->Apply(shapes)->UseRealTime();
BENCHMARK(BM_onednn_layouts)->Apply(shapes_and_layouts)->UseRealTime();
#if CANOPY_BENCH_LIBXSMM
BENCHMARK(BM_libxsmm)->Apply(shapes)->UseRealTime();
#endif
BENCHMARK_MAIN();
