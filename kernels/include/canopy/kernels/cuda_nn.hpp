// The GPU kernels of the nn primitives: convolution, windowed reductions (pooling) and max
// pooling's derivative. Same calls as the CPU ones in cpu_nn.hpp (raw device pointers plus geometry),
// with the device ordinal each runs on; direct CUDA kernels, one thread per output element,
// deterministic (no atomics). Convolution tries cuDNN first (kernels/cuda/cudnn_conv.cpp).
#pragma once

#include <string>

#include "canopy/dtype.hpp"
#include "canopy/kernels/nn_geometry.hpp"
#include "canopy/precision.hpp"

namespace canopy::kernels::cuda {

/// Whether convolutions and softmax run on cuDNN where it has a plan for them (the default in a
/// build with cuDNN); off, or in a build without it, they run canopy's direct kernels. The GPU
/// suite checks both paths against the CPU.
void set_use_cudnn(bool on);
bool use_cudnn();
/// Whether a convolution's cuDNN plan is chosen by timing: at the first call of each problem
/// (shapes, layout, dtype, alignment, precision) on a thread, the first few engines cuDNN's
/// heuristics rank, among those canopy accepts, run on the call's own operands and the fastest is
/// kept, as XLA's autotuner and PyTorch's cudnn.benchmark do. On by default (CANOPY_CUDNN_AUTOTUNE=0
/// turns it off); off, the heuristics' first choice runs, the same engine in every process (the
/// engines differ in summation order, so results may differ in the last bits between choices).
void set_cudnn_autotune(bool on);
bool cudnn_autotune();
/// Whether this build has cuDNN (9.8 or later: the graph API with device properties).
bool cudnn_built();
/// cuDNN calls made so far (convolutions and softmaxes run on cuDNN, not the direct kernels): what
/// shows that cuDNN ran, since every path that declines falls back to the direct kernels quietly.
std::int64_t cudnn_calls();
/// cuDNN's convolution operations: a forward convolution, and the two gradient forms that lax
/// writes as convolutions and cuDNN runs as its own backward operations.
enum class CudnnConv : int { forward = 0, backward_data = 1, backward_filter = 2 };
/// Convolutions run on cuDNN so far as operation `kind` (each is also one of cudnn_calls()).
std::int64_t cudnn_conv_calls(CudnnConv kind);
/// What cuDNN ran for this thread's last convolution, where cuDNN ran it: the operation, cuDNN's
/// engine index, the engine's numerical notes and how it was chosen ("backward filter: engine 27
/// (notes: none), timed"); empty where the last one ran on a direct kernel or there was none. GPU
/// verification names it when a convolution's result disagrees with the CPU's.
std::string cudnn_last_conv_engine();
/// Whether cuDNN ran this thread's last convolution (cudnn_last_conv_engine is not empty then):
/// GPU verification gives a convolution that cuDNN computed the rounding of a transform.
bool cudnn_ran_last_conv();

/// out = conv(lhs, rhs): on cuDNN (1 to 3 spatial dims; see use_cudnn) as one forward,
/// backward-data or backward-filter operation (lax's gradient convolutions are recognised as
/// such), else a direct kernel as cpu::conv_loop (sums in double). f32, f64, bf16, f16. At most 6 spatial dims (DeviceError beyond).
/// f32 at Precision::high may run on cuDNN's TF32 tensor-core engines; at the others it is exact.
void conv(DType dtype, const void* lhs, const void* rhs, void* out, const ConvGeometry& g, int device,
          Precision precision = Precision::default_);
/// out = conv(lhs, rhs) + bias, the bias (g.out_features values) added along the result's feature
/// dim, as one cuDNN graph: the forward convolution and a pointwise add, the sum kept in f32 between
/// them (rounded once to dtype). f32, bf16, f16. False, having done nothing, where cuDNN is off
/// or missing, g is not conv_bias_form, or cuDNN has no plan for the graph: the caller then runs
/// conv and the add.
bool conv_bias(DType dtype, const void* lhs, const void* rhs, const void* bias, void* out, const ConvGeometry& g,
               int device, Precision precision = Precision::default_);
/// Whether conv_bias may take `g`: a geometry that conv runs on cuDNN as a forward convolution (not
/// one of lax's gradient forms). Host-side, in every build: jit's GPU pass asks it.
bool conv_bias_form(const ConvGeometry& g);
/// conv_bias calls run as one cuDNN graph so far (each also a forward operation of cudnn_conv_calls).
std::int64_t cudnn_conv_bias_calls();
/// out = reduce_window(in) as the CPU loops (compute type, padding holds the identity); every
/// dtype, at most 8 dims.
void reduce_window(WindowOp op, DType dtype, const void* in, void* out, const WindowGeometry& g, int device);
/// Max pooling's jvp: out[i] = tangent at window i's first maximal operand element (0 when that is
/// padding or the window holds a NaN), as cpu::select_and_gather_add. Floating dtypes.
void select_and_gather_add(DType dtype, const void* tangent, const void* operand, void* out,
                           const WindowGeometry& g, int device);
/// Its transpose: out (operand's shape) = the sum of the source values of the windows that
/// selected each element, added in window order as cpu::select_and_scatter_add. Floating dtypes.
void select_and_scatter_add(DType dtype, const void* source, const void* operand, void* out,
                            const WindowGeometry& g, int device);

}  // namespace canopy::kernels::cuda
