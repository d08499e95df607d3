// Matmul on the GPU: cuBLAS's strided-batched GEMM for the floating types (f32 and f64 in their
// own precision, no TF32, so results agree with the CPU's, unless Precision::high lets f32 run on
// TF32 tensor cores; bf16/f16 stored, f32 accumulated),
// and a plain kernel for integer and bool operands, which cuBLAS does not multiply.
#include <memory>
#include <mutex>
#include <vector>

#include <cublas_v2.h>

#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/element_math.hpp"
#include "cublaslt_matmul.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
namespace {

void check_blas(cublasStatus_t st, const char* api) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  if (st == CUBLAS_STATUS_ALLOC_FAILED)
    ::canopy::detail::raise<ResourceError>(api, "device memory", "", "is exhausted (cuBLAS workspace)");
  ::canopy::detail::raise<DeviceError>(api, "cuBLAS call", "", ::canopy::detail::concat("failed: ", cublasGetStatusString(st)));
}

// cuBLAS's workspace for a handle: 32 MiB, what cuBLAS asks for on Hopper.
constexpr std::size_t kBlasWorkspace = std::size_t{32} << 20;

// One handle per host thread and device (a cuBLAS handle must not be used by two threads at
// once); created on first use, bound to the stream of the call (the device's, or a recording's),
// with a workspace of canopy's: otherwise cuBLAS allocates its own, and in a recorded graph as
// memory nodes outside the device's cache.
cublasHandle_t handle(int device) {
  struct Handle {
    cublasHandle_t h = nullptr;
    std::shared_ptr<Buffer> workspace;
  };
  thread_local std::vector<Handle> handles;
  cudaStream_t s = detail::stream(device);  // also makes `device` current
  if (handles.size() <= static_cast<std::size_t>(device)) handles.resize(static_cast<std::size_t>(device) + 1);
  Handle& e = handles[static_cast<std::size_t>(device)];
  if (!e.h) {
    // Made by a call kernel by kernel, never inside a graph's recording (a graph recorded on a
    // thread that has not called cuBLAS yet is refused; that program runs kernel by kernel).
    detail::refuse_while_recording(device, "cublasCreate");
    e.workspace = allocate(kBlasWorkspace, device);
    check_blas(cublasCreate(&e.h), "matmul");
    // Default math: the compute type decides (f32 asks for pedantic f32, so never TF32; 16-bit
    // floats may use tensor cores).
    check_blas(cublasSetMathMode(e.h, CUBLAS_DEFAULT_MATH), "matmul");
  }
  check_blas(cublasSetStream(e.h, s), "matmul");
  // Setting the stream resets the workspace to cuBLAS's own pool: set ours again. Every use is on
  // the device's stream or in a graph replayed on it, so uses never overlap.
  check_blas(cublasSetWorkspace(e.h, e.workspace->data(), kBlasWorkspace), "matmul");
  // A graph being recorded bakes the workspace's address in: it keeps the workspace alive past
  // this thread's handles.
  if (detail::Recording* r = detail::recording_for(device)) r->blocks.push_back(e.workspace);
  return e.h;
}

template <class T>
__global__ void matmul_kernel(const T* a, const T* b, T* c, std::int64_t batch, std::int64_t m, std::int64_t k,
                              std::int64_t n, bool trans_a, bool trans_b) {
  using C = compute_type_t<T>;
  const std::int64_t total = batch * m * n;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total; i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t j = i % n, row = i / n, r = row % m, bi = row / m;
    const T* ab = a + bi * m * k;
    const T* bb = b + bi * k * n;
    C acc = C(0);
    for (std::int64_t p = 0; p < k; ++p) {
      const C x = math::load(trans_a ? ab[p * m + r] : ab[r * k + p]);
      const C y = math::load(trans_b ? bb[j * k + p] : bb[p * n + j]);
      if constexpr (std::is_same_v<C, bool>) acc = acc || (x && y);
      else acc = math::binary(BinaryOp::add, acc, math::binary(BinaryOp::mul, x, y));
    }
    c[i] = math::store<T>(acc);
  }
}

}  // namespace

void matmul(DType dtype, const void* a, const void* b, void* c, std::int64_t batch, std::int64_t m, std::int64_t k,
            std::int64_t n, bool trans_a, bool trans_b, int device, Precision precision) {
  if (batch * m * n == 0) return;
  cudaDataType_t type;
  // f32 in f32 (pedantic: no TF32) and f64 in f64; bf16 and f16 products on tensor cores,
  // accumulated in f32, as JAX and PyTorch compute them (pedantic f32 compute ran them 20x slower).
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F_PEDANTIC;
  switch (dtype) {
    case DType::f32:
      type = CUDA_R_32F;
      // TF32 products (10-bit mantissas) accumulated in f32, where the program opted in (jax's
      // Precision.HIGH on a GPU); exact f32 otherwise, canopy's default.
      if (f32_on_tensor_cores(precision)) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      break;
    case DType::f64: type = CUDA_R_64F; compute = CUBLAS_COMPUTE_64F_PEDANTIC; break;
    case DType::bf16: type = CUDA_R_16BF; compute = CUBLAS_COMPUTE_32F; break;
    case DType::f16: type = CUDA_R_16F; compute = CUBLAS_COMPUTE_32F; break;
    default: {
      cudaStream_t s = detail::stream(device);
      visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
        matmul_kernel<T><<<detail::blocks_for(batch * m * n), detail::kThreads, 0, s>>>(
            static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), batch, m, k, n, trans_a, trans_b);
      });
      detail::check_launch("matmul");
      return;
    }
  }
  if (k == 0) {  // an empty sum: zeros (cuBLAS leaves C alone for k = 0 only with beta = 0 in some versions)
    detail::check(cudaMemsetAsync(c, 0, static_cast<std::size_t>(batch * m * n) * itemsize(dtype), detail::stream(device)),
                  "matmul");
    return;
  }
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || batch > INT32_MAX)
    ::canopy::detail::raise<DeviceError>("matmul", "dims", ::canopy::detail::concat(batch, "x", m, "x", k, "x", n),
                                         "exceed cuBLAS's 32-bit sizes");
  // Row-major C = A @ B is column-major C^T = B^T @ A^T: cuBLAS multiplies B's and A's buffers
  // as they lie, with the transposes swapped in.
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f = 1.0f, zero_f = 0.0f;
  const void* alpha = dtype == DType::f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = dtype == DType::f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  // cuBLASLt, with the algorithm of large products timed at each shape's first call (the cuBLAS
  // entry points below take the heuristic's first); cuBLAS where cuBLASLt has none.
  if (detail::matmul_lt(dtype, a, b, c, batch, m, k, n, trans_a, trans_b, device, precision)) return;
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  if (batch == 1) {
    check_blas(cublasGemmEx(handle(device), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K,
                            alpha, b, type, trans_b ? K : N, a, type, trans_a ? M : K, beta, c, type, N, compute,
                            CUBLAS_GEMM_DEFAULT),
               "matmul");
    return;
  }
  check_blas(cublasGemmStridedBatchedEx(handle(device), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                        trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, alpha, b, type, trans_b ? K : N,
                                        k * n, a, type, trans_a ? M : K, m * k, beta, c, type, N, m * n,
                                        static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT),
             "matmul");
}

}  // namespace canopy::kernels::cuda
