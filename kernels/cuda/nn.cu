// Convolution and pooling on the GPU. Convolution goes to cuDNN where it has a plan
// (cudnn_conv.cpp); otherwise, and for pooling, direct kernels run: one thread per output
// element, each computed by nn_math.hpp (the definitions the CPU suite checks against the CPU
// loops). Max pooling's transpose runs one thread per operand element, which gathers the windows
// that selected it: no atomics, so results are deterministic and equal the CPU's summation order.
#include <algorithm>

#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_nn.hpp"
#include "cudnn_entry.hpp"
#include "nn_math.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
namespace {

using detail::blocks_for;
using detail::kThreads;

template <class T>
__global__ void conv_kernel(const T* lhs, const T* rhs, T* out, nn::ConvParams p) {
  CANOPY_GRID_LOOP(i, p.outputs) {
    std::int64_t off = 0;
    const T v = nn::conv_element(lhs, rhs, p, i, off);
    out[off] = v;
  }
}

template <class T>
__global__ void reduce_window_kernel(WindowOp op, const T* in, T* out, nn::WindowParams p) {
  CANOPY_GRID_LOOP(w, p.outputs) out[w] = nn::reduce_window_element(op, in, p, w);
}

// Tiled windows (nn::windows_tile): 32-bit indices, and the scatter a thread per window.
template <class T>
__global__ void reduce_window_tiled_kernel(WindowOp op, const T* in, T* out, nn::WindowParams p) {
  CANOPY_GRID_LOOP(w, p.outputs) out[w] = nn::reduce_window_tiled(op, in, p, static_cast<std::int32_t>(w));
}

template <class T>
__global__ void scatter_tiled_kernel(const T* source, const T* x, T* out, nn::WindowParams p) {
  CANOPY_GRID_LOOP(w, p.outputs) nn::scatter_window_tiled(source, x, p, static_cast<std::int32_t>(w), out);
}

template <class T>
__global__ void gather_kernel(const T* tangent, const T* x, T* out, nn::WindowParams p) {
  CANOPY_GRID_LOOP(w, p.outputs) out[w] = nn::gather_element(tangent, x, p, w);
}

template <class T>
__global__ void selection_kernel(const T* x, std::int64_t* sel, nn::WindowParams p) {
  CANOPY_GRID_LOOP(w, p.outputs) sel[w] = nn::window_selection(x, p, w);
}

template <class T>
__global__ void scatter_kernel(const T* source, const std::int64_t* sel, T* out, nn::WindowParams p) {
  CANOPY_GRID_LOOP(e, p.inputs) out[e] = nn::scatter_element(source, sel, p, e);
}


/// f(type_identity<T>) for the floating dtypes; the primitives admit no other here.
template <class F>
void visit_float(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return f(std::type_identity<float>{});
    case DType::f64: return f(std::type_identity<double>{});
    case DType::bf16: return f(std::type_identity<bf16>{});
    case DType::f16: return f(std::type_identity<f16>{});
    default: return;
  }
}

}  // namespace

void conv(DType dtype, const void* lhs, const void* rhs, void* out, const ConvGeometry& g, int device,
          Precision precision) {
  // The direct kernel below computes exactly at every precision (`high` allows TF32, never asks it).
  if (cudnn::conv(dtype, lhs, rhs, out, g, device, precision)) return;
  const nn::ConvParams p = nn::conv_params(g);
  if (p.outputs == 0) return;
  cudaStream_t s = detail::stream(device);
  visit_float(dtype, [&]<class T>(std::type_identity<T>) {
    conv_kernel<T><<<blocks_for(p.outputs), kThreads, 0, s>>>(static_cast<const T*>(lhs), static_cast<const T*>(rhs),
                                                               static_cast<T*>(out), p);
  });
  detail::check_launch("conv_general_dilated");
}

void reduce_window(WindowOp op, DType dtype, const void* in, void* out, const WindowGeometry& g, int device) {
  const nn::WindowParams p = nn::window_params(g, "reduce_window");
  if (p.outputs == 0) return;
  cudaStream_t s = detail::stream(device);
  const bool tiled = nn::windows_tile(p);
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    if (tiled)
      reduce_window_tiled_kernel<T><<<blocks_for(p.outputs), kThreads, 0, s>>>(op, static_cast<const T*>(in),
                                                                                static_cast<T*>(out), p);
    else
      reduce_window_kernel<T><<<blocks_for(p.outputs), kThreads, 0, s>>>(op, static_cast<const T*>(in),
                                                                          static_cast<T*>(out), p);
  });
  detail::check_launch("reduce_window");
}

void select_and_gather_add(DType dtype, const void* tangent, const void* operand, void* out,
                           const WindowGeometry& g, int device) {
  const nn::WindowParams p = nn::window_params(g, "select_and_gather_add");
  if (p.outputs == 0) return;
  cudaStream_t s = detail::stream(device);
  visit_float(dtype, [&]<class T>(std::type_identity<T>) {
    gather_kernel<T><<<blocks_for(p.outputs), kThreads, 0, s>>>(
        static_cast<const T*>(tangent), static_cast<const T*>(operand), static_cast<T*>(out), p);
  });
  detail::check_launch("select_and_gather_add");
}

void select_and_scatter_add(DType dtype, const void* source, const void* operand, void* out,
                            const WindowGeometry& g, int device) {
  const nn::WindowParams p = nn::window_params(g, "select_and_scatter_add");
  if (p.inputs == 0) return;
  if (nn::windows_tile(p)) {
    cudaStream_t s = detail::stream(device);
    // Elements in no window get 0 (0.0 of every float dtype is all zero bits).
    if (!nn::windows_cover(p))
      detail::check(cudaMemsetAsync(out, 0, static_cast<std::size_t>(p.inputs) * itemsize(dtype), s),
                    "select_and_scatter_add");
    visit_float(dtype, [&]<class T>(std::type_identity<T>) {
      scatter_tiled_kernel<T><<<blocks_for(p.outputs), kThreads, 0, s>>>(static_cast<const T*>(source),
                                                                          static_cast<const T*>(operand), static_cast<T*>(out), p);
    });
    detail::check_launch("select_and_scatter_add");
    return;
  }
  // Each window's selection first (a block from the device's cache: it goes back to the cache
  // when this returns, and work issued later on the same stream runs after these kernels).
  const auto sel_bytes = static_cast<std::size_t>(std::max<std::int64_t>(p.outputs, 1)) * sizeof(std::int64_t);
  const std::shared_ptr<Buffer> sel_block = allocate(sel_bytes, device);
  auto* sel = static_cast<std::int64_t*>(sel_block->data());
  cudaStream_t s = detail::stream(device);
  visit_float(dtype, [&]<class T>(std::type_identity<T>) {
    if (p.outputs > 0)
      selection_kernel<T><<<blocks_for(p.outputs), kThreads, 0, s>>>(static_cast<const T*>(operand), sel, p);
    scatter_kernel<T><<<blocks_for(p.inputs), kThreads, 0, s>>>(static_cast<const T*>(source), sel,
                                                                 static_cast<T*>(out), p);
  });
  detail::check_launch("select_and_scatter_add");
}

}  // namespace canopy::kernels::cuda
