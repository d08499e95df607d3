// Matmuls on cuBLASLt: the plain product (matmul.cu's first choice for f32, bf16 and f16), one that
// adds a bias row as it writes the product (CUBLASLT_EPILOGUE_BIAS), or one that also writes the
// column sums of one operand, a dense layer's bias gradient (CUBLASLT_EPILOGUE_BGRADA/BGRADB). A
// plan (descriptors, layouts, the heuristic's algorithms) is built once per epilogue, shape,
// dtype, alignment, device and precision and reused; a call cuBLASLt has no algorithm for, or
// refuses, is remembered too (nullptr), and the caller runs cuBLAS and the add or the sum.
// At a plan's first call outside a graph's recording, for products of a GFLOP or more, the
// heuristic's first kCandidates algorithms run on the call's operands and the fastest is kept
// (set_cublaslt_autotune).
// Not RELU_BIAS: cuBLASLt's relu turns a NaN into 0 (canopy's max(NaN, 0) is NaN).
#include <cublasLt.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/environment.hpp"
#include "cublaslt_layout.hpp"
#include "cublaslt_matmul.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
namespace {

// What the heuristic may ask for; NVIDIA suggests 32 MiB on Hopper. Only what the chosen
// algorithm needs is taken, per call, from the device's caching allocator.
constexpr std::uint64_t kMaxWorkspace = 32ull << 20;
/// Algorithms of the heuristic timed at a plan's first call.
constexpr int kCandidates = 8;
/// Products of fewer floating-point operations take the heuristic's first untimed: a training
/// step's small products (W3's 128 x 784 x 512) run for a few microseconds, as much as the timing's
/// noise. With them timed, W3's step ran at 0.108 ms on an H200, against 0.100 ms before on
/// cuBLAS's own choices.
constexpr double kAutotuneMinFlops = 1e9;

constinit EnvSwitch autotune_flag{"CANOPY_CUBLASLT_AUTOTUNE", true};

void check_lt(cublasStatus_t st, const char* api) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  if (st == CUBLAS_STATUS_ALLOC_FAILED)
    ::canopy::detail::raise<ResourceError>(api, "host or device memory", "", "is exhausted (cuBLASLt)");
  ::canopy::detail::raise<DeviceError>(api, "cuBLASLt call", "",
                                       ::canopy::detail::concat("failed: ", cublasLtGetStatusString(st)));
}

// One handle per host thread and device, as for cuBLAS (matmul.cu).
cublasLtHandle_t handle(int device) {
  thread_local std::vector<cublasLtHandle_t> handles;
  (void)detail::stream(device);  // makes `device` current
  if (handles.size() <= static_cast<std::size_t>(device)) handles.resize(static_cast<std::size_t>(device) + 1, nullptr);
  cublasLtHandle_t& h = handles[static_cast<std::size_t>(device)];
  if (!h) {
    detail::refuse_while_recording(device, "cublasLtCreate");  // made outside graphs, as cuBLAS's
    check_lt(cublasLtCreate(&h), "matmul_bias");
  }
  return h;
}

struct PlanKey {
  DType dtype;
  std::int64_t batch, m, k, n;
  bool trans_a, trans_b;
  int device;
  std::uint32_t align_a, align_b, align_c, align_bias;
  bool tf32;  ///< f32 products may run on TF32 tensor cores (Precision::high)
  cublasLtEpilogue_t epilogue;
  auto tie() const {
    return std::tie(dtype, batch, m, k, n, trans_a, trans_b, device, align_a, align_b, align_c, align_bias, tf32, epilogue);
  }
  bool operator<(const PlanKey& o) const { return tie() < o.tie(); }
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace = 0;
  /// The heuristic's algorithms in its order (the first is algo until timed), and whether they were.
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;
  bool timed = false;
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    for (cublasLtMatrixLayout_t l : {a, b, d})
      if (l) cublasLtMatrixLayoutDestroy(l);
  }
};

template <class T>
bool set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v) {
  return cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof v) == CUBLAS_STATUS_SUCCESS;
}

bool make_layout(cublasLtMatrixLayout_t* out, cudaDataType_t type, const detail::LtMatrix& x, std::int64_t batch) {
  if (cublasLtMatrixLayoutCreate(out, type, x.rows, x.cols, x.ld) != CUBLAS_STATUS_SUCCESS) return false;
  if (batch == 1) return true;
  const auto count = static_cast<std::int32_t>(batch);
  const std::int64_t stride = x.batch_stride;
  auto layout_set = [&](cublasLtMatrixLayoutAttribute_t attr, const auto& v) {
    return cublasLtMatrixLayoutSetAttribute(*out, attr, &v, sizeof v) == CUBLAS_STATUS_SUCCESS;
  };
  return layout_set(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, count) && layout_set(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride);
}

struct Preference {
  cublasLtMatmulPreference_t p = nullptr;
  ~Preference() {
    if (p) cublasLtMatmulPreferenceDestroy(p);
  }
  template <class T>
  bool set(cublasLtMatmulPreferenceAttributes_t attr, const T& v) {
    return cublasLtMatmulPreferenceSetAttribute(p, attr, &v, sizeof v) == CUBLAS_STATUS_SUCCESS;
  }
};

/// The plan for `key` with the given compute type, or nullptr where cuBLASLt refuses it. `vector`:
/// the bias the epilogue reads, or the bias gradient it writes (the same attribute).
std::unique_ptr<Plan> try_plan(const PlanKey& key, cudaDataType_t type, cublasComputeType_t compute, const void* vector,
                               cublasLtHandle_t h) {
  const detail::LtMatmulLayout l = detail::lt_matmul_layout(key.batch, key.m, key.k, key.n, key.trans_a, key.trans_b);
  auto plan = std::make_unique<Plan>();
  if (cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return nullptr;
  const cublasOperation_t op_a = l.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = l.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  // The bias (gradient) type defaults to D's and its batch stride to 0: one row for every batch item.
  if (!set(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, op_a) || !set(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, op_b) ||
      !set(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, key.epilogue) ||
      !set(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, vector))
    return nullptr;
  if (!make_layout(&plan->a, type, l.a, l.batch) || !make_layout(&plan->b, type, l.b, l.batch) ||
      !make_layout(&plan->d, type, l.d, l.batch))
    return nullptr;
  Preference pref;
  // Split-k partial sums in f32: INPLACE sums them in the output buffer and type, so only for f32
  // outputs (a mask without NONE still allows algorithms that do not split). cuBLASLt's A is our b
  // and its B our a (cublaslt_layout.hpp).
  const std::uint32_t reductions = type == CUDA_R_32F
                                       ? CUBLASLT_REDUCTION_SCHEME_INPLACE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE
                                       : CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  if (cublasLtMatmulPreferenceCreate(&pref.p) != CUBLAS_STATUS_SUCCESS ||
      !pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, kMaxWorkspace) ||
      !pref.set(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reductions) ||
      !pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b) ||
      !pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a) ||
      !pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c) ||
      !pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_c))
    return nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> results(kCandidates);
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(h, plan->desc, plan->a, plan->b, plan->d, plan->d, pref.p, kCandidates, results.data(),
                                     &found) != CUBLAS_STATUS_SUCCESS)
    return nullptr;
  for (int i = 0; i < found; ++i)
    if (results[static_cast<std::size_t>(i)].state == CUBLAS_STATUS_SUCCESS)
      plan->candidates.push_back(results[static_cast<std::size_t>(i)]);
  if (plan->candidates.empty()) return nullptr;
  plan->algo = plan->candidates.front().algo;
  plan->workspace = plan->candidates.front().workspaceSize;
  return plan;
}

/// Runs `plan` with algorithm `r` on the operands; its status.
cublasStatus_t run_algorithm(cublasLtHandle_t h, const Plan& plan, const cublasLtMatmulHeuristicResult_t& r, const void* a,
                             const void* b, void* c, void* workspace, int device) {
  const float one = 1.0f, zero = 0.0f;
  return cublasLtMatmul(h, plan.desc, &one, b, plan.a, a, plan.b, &zero, c, plan.d, c, plan.d, &r.algo, workspace,
                        r.workspaceSize, detail::stream(device));
}

/// Keeps the fastest of plan's candidates on these operands (their results are overwritten by the
/// call that follows): each run once, then timed over three runs; the heuristic's first unless
/// another is faster by more than detail::kAutotuneMargin.
void time_candidates(cublasLtHandle_t h, Plan& plan, const void* a, const void* b, void* c, int device) {
  plan.timed = true;
  if (plan.candidates.size() < 2) return;
  std::size_t most = 0;
  for (const auto& r : plan.candidates) most = std::max(most, r.workspaceSize);
  std::shared_ptr<Buffer> workspace;
  try {
    if (most) workspace = allocate(most, device);
  } catch (const ResourceError&) {
    return;  // the heuristic's first, whose workspace the call allocates on its own
  }
  std::vector<double> ms(plan.candidates.size());
  for (std::size_t i = 0; i < plan.candidates.size(); ++i)
    ms[i] = detail::time_runs(device, 3, [&] {
      if (run_algorithm(h, plan, plan.candidates[i], a, b, c, workspace ? workspace->data() : nullptr, device) ==
          CUBLAS_STATUS_SUCCESS)
        return true;
      (void)cudaGetLastError();
      return false;
    });
  const std::size_t best = detail::timed_choice(ms);
  plan.algo = plan.candidates[best].algo;
  plan.workspace = plan.candidates[best].workspaceSize;
}

/// Per host thread (a plan's descriptor holds the bias pointer of the call using it).
std::map<PlanKey, std::unique_ptr<Plan>>& plans() {
  thread_local std::map<PlanKey, std::unique_ptr<Plan>> p;
  return p;
}

std::atomic<std::int64_t>& calls() {
  static std::atomic<std::int64_t> n{0};
  return n;
}

/// One cuBLASLt matmul with `epilogue`, whose vector (the bias read, or the bias gradient written)
/// is `vector`; false, having run nothing, where cuBLASLt has no algorithm for it or refuses it.
bool matmul_with_epilogue(const char* api, cublasLtEpilogue_t epilogue, DType dtype, const void* a, const void* b,
                          const void* vector, void* c, std::int64_t batch, std::int64_t m, std::int64_t k, std::int64_t n,
                          bool trans_a, bool trans_b, int device, Precision precision) {
  cudaDataType_t type;
  switch (dtype) {
    case DType::f32: type = CUDA_R_32F; break;
    case DType::bf16: type = CUDA_R_16BF; break;
    case DType::f16: type = CUDA_R_16F; break;
    default: return false;
  }
  if (k == 0 || batch > std::numeric_limits<std::int32_t>::max()) return false;
  // An empty product: a bias has nothing to go to, but a bias gradient still has its sums (which
  // the caller's path computes).
  if (batch * m * n == 0) return epilogue == CUBLASLT_EPILOGUE_BIAS;
  cublasLtHandle_t h = handle(device);
  const bool tf32 = dtype == DType::f32 && f32_on_tensor_cores(precision);
  const PlanKey key{dtype, batch, m, k, n, trans_a, trans_b, device, detail::lt_alignment(a),
                    detail::lt_alignment(b), detail::lt_alignment(c), detail::lt_alignment(vector), tf32, epilogue};
  auto [it, fresh] = plans().try_emplace(key);
  if (fresh) {
    // f32: pedantic f32 arithmetic as the cuBLAS path has; where cuBLASLt has no such kernel, its
    // plain 32F compute type, which is f32 too (TF32 only with CUBLAS_COMPUTE_32F_FAST_TF32).
    // bf16/f16: tensor cores with f32 accumulation first, as the cuBLAS path. f32 at
    // Precision::high: TF32 tensor cores first, then the exact forms.
    const bool half = dtype != DType::f32;
    if (tf32) it->second = try_plan(key, type, CUBLAS_COMPUTE_32F_FAST_TF32, vector, h);
    if (!it->second) it->second = try_plan(key, type, half ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_PEDANTIC, vector, h);
    if (!it->second) it->second = try_plan(key, type, half ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F, vector, h);
  }
  Plan* plan = it->second.get();
  if (!plan) return false;
  check_lt(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vector, sizeof vector), api);
  if (!plan->timed && cublaslt_autotune() && !detail::recording_for(device)) {
    if (2.0 * static_cast<double>(batch * m) * static_cast<double>(n) * static_cast<double>(k) >= kAutotuneMinFlops)
      time_candidates(h, *plan, a, b, c, device);
    else
      plan->timed = true;  // the heuristic's first
  }
  // Freed when this returns, reused by later work on the same stream only (memory.cpp).
  const std::shared_ptr<Buffer> workspace = plan->workspace ? allocate(plan->workspace, device) : nullptr;
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t st = cublasLtMatmul(h, plan->desc, &one, b, plan->a, a, plan->b, &zero, c, plan->d, c, plan->d,
                                           &plan->algo, workspace ? workspace->data() : nullptr, plan->workspace,
                                           detail::stream(device));
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE) {
    it->second.reset();  // refused at run time: this key takes the plain path from now on
    return false;
  }
  check_lt(st, api);
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT) ++calls();  // the plain product is matmul's own
  return true;
}

}  // namespace

std::int64_t cublaslt_calls() { return calls(); }
void set_cublaslt_autotune(bool on) { autotune_flag.set(on); }
bool cublaslt_autotune() { return autotune_flag.get(); }

namespace detail {
bool matmul_lt(DType dtype, const void* a, const void* b, void* c, std::int64_t batch, std::int64_t m, std::int64_t k,
               std::int64_t n, bool trans_a, bool trans_b, int device, Precision precision) {
  return matmul_with_epilogue("matmul", CUBLASLT_EPILOGUE_DEFAULT, dtype, a, b, nullptr, c, batch, m, k, n, trans_a,
                              trans_b, device, precision);
}
}  // namespace detail

bool matmul_bias(DType dtype, const void* a, const void* b, const void* bias, void* c, std::int64_t batch, std::int64_t m,
                 std::int64_t k, std::int64_t n, bool trans_a, bool trans_b, int device, Precision precision) {
  return matmul_with_epilogue("matmul_bias", CUBLASLT_EPILOGUE_BIAS, dtype, a, b, bias, c, batch, m, k, n, trans_a, trans_b,
                              device, precision);
}

// Row-major C = op(a) @ op(b) is cuBLASLt's column-major D = C^T = op(b)^T @ op(a)^T, with its A
// our b and its B our a: our b's column sums are BGRADA's, our a's BGRADB's (cublaslt_layout.hpp).
bool matmul_bias_grad(DType dtype, const void* a, const void* b, void* c, void* sums, std::int64_t m, std::int64_t k,
                      std::int64_t n, bool trans_a, bool trans_b, bool sum_b, int device, Precision precision) {
  const detail::LtBiasGrad which = detail::lt_bias_grad(sum_b, trans_a, trans_b);
  if (which == detail::LtBiasGrad::none) return false;
  const cublasLtEpilogue_t epilogue =
      which == detail::LtBiasGrad::a_of_lt ? CUBLASLT_EPILOGUE_BGRADA : CUBLASLT_EPILOGUE_BGRADB;
  return matmul_with_epilogue("matmul_bias_grad", epilogue, dtype, a, b, sums, c, 1, m, k, n, trans_a, trans_b, device,
                              precision);
}

}  // namespace canopy::kernels::cuda
