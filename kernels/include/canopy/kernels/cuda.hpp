// The GPU backend's kernels and runtime: device memory, transfers and the kernel families the
// primitives lower to on `cuda:k`. Same shape as cpu.hpp (raw device pointers, shapes, dtypes),
// plus the device ordinal each call runs on. Every call is asynchronous on the device's one
// stream (kernels and copies run in the order they were issued); host reads synchronise.
// In a build without CUDA (meson -Dcuda=disabled, or no toolkit) device_count() is 0 and the
// rest raise DeviceError: no `cuda:k` array can exist there.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "canopy/dtype.hpp"
#include "canopy/kernels/buffer.hpp"
#include "canopy/kernels/fused_program.hpp"
#include "canopy/kernels/ops.hpp"
#include "canopy/kernels/scalar_program.hpp"
#include "canopy/precision.hpp"
#include "canopy/shape.hpp"

namespace canopy::kernels::cuda {

/// Whether this build has the GPU backend.
bool built();
/// CUDA devices this process can use: 0 without the backend, without a driver or without a GPU.
int device_count();
/// Why device_count() is 0, for error messages ("this build has no CUDA backend", "no CUDA
/// driver (libcuda.so.1) is loaded: ...", ...); empty when there are devices.
std::string unavailable_reason();

/// `bytes` of device memory on `device` from its caching allocator (256-byte aligned; contents
/// uninitialised). ResourceError when the device has not the memory, even after its cache is freed.
std::shared_ptr<Buffer> allocate(std::size_t bytes, int device);
/// Caching-allocator counters of one device.
AllocatorStats allocator_stats(int device);
/// Returns the device's cached free blocks to the driver.
void empty_cache(int device);

/// host -> device, asynchronous. `host` must be pageable memory (all that canopy allocates is):
/// CUDA has staged those bytes when the call returns, so the host block may be freed or reused
/// at once, while the transfer to the device runs in stream order.
void copy_to_device(const void* host, void* dst, std::size_t bytes, int device);
/// device -> host; returns when the bytes are in `host` (waits for the work before it).
void copy_to_host(const void* src, void* host, std::size_t bytes, int device);
/// device -> device, on the same device or between two (peer copy).
void copy_device(const void* src, int src_device, void* dst, int dst_device, std::size_t bytes);
/// Waits until everything issued to `device` has run; a kernel's failure surfaces here as DeviceError.
void synchronize(int device);

/// Whether a product at precision `p` may run its f32 operands on TF32 tensor cores: at `high`
/// only (the GPU's choice; the CPU computes f32 exactly at every precision).
constexpr bool f32_on_tensor_cores(Precision p) { return p == Precision::high; }

// Kernel families (as cpu.hpp's, on `device`; the ops of canopy/kernels/ops.hpp).

void unary(UnaryOp op, DType dtype, const void* in, void* out, std::int64_t n, int device);
void binary(BinaryOp op, DType dtype, const void* a, const Shape& a_shape, const void* b, const Shape& b_shape,
            void* out, const Shape& out_shape, int device);
/// The binary ops outside BinaryOp: integer shifts and nextafter (with broadcasting).
enum class SpecialBinaryOp : std::uint8_t { shift_left, shift_right_logical, shift_right_arithmetic, next_after };
void special_binary(SpecialBinaryOp op, DType dtype, const void* a, const Shape& a_shape, const void* b,
                    const Shape& b_shape, void* out, const Shape& out_shape, int device);
void convert(DType from, DType to, const void* in, void* out, std::int64_t n, int device);
/// Copies the elements of `shape` from `in` read with element strides in_strides (0 = broadcast,
/// negative = reversed) to `out` written with out_strides: transposes, broadcasts, slices, rev,
/// and the placing of pad's and concatenate's operands. At most 8 dims after merging.
void copy_strided(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides, const Shape& shape,
                  void* out, std::span<const std::int64_t> out_strides, int device);
/// Fills n elements of `itemsize` bytes with the value at host address `value`.
void fill(std::size_t itemsize, const void* value, void* out, std::int64_t n, int device);
void select_n(DType which_dtype, const void* which, std::span<const void* const> cases, std::size_t itemsize,
              void* out, std::int64_t n, int device);
void iota(DType dtype, const Shape& shape, int dimension, void* out, int device);
/// Reduces `in` over sorted unique `axes` (sum, max, min; products with `prod`).
void reduce(ReduceOp op, DType dtype, const void* in, const Shape& shape, std::span<const int> axes, void* out,
            int device);
void reduce_prod(DType dtype, const void* in, const Shape& shape, std::span<const int> axes, void* out, int device);
/// cpu::cumulative on the GPU: one thread per (outer, inner) column walking the axis in order.
void cumulative(CumulativeOp op, DType dtype, const void* in, void* out, const Shape& shape, int axis, bool reverse,
                int device);
/// Index (as i64) of the first maximum / minimum along `axis`; a NaN beats every number and the
/// first NaN wins (XLA's comparator, as the CPU kernel).
void argminmax(bool max, DType dtype, const void* in, const Shape& shape, int axis, std::int64_t* out, int device);
/// C[b] = op(A[b]) @ op(B[b]), row-major; f32, f64, bf16 and f16 on cuBLAS (f32 in f32 without
/// TF32, or on TF32 tensor cores at Precision::high; f64 in f64; bf16/f16 on tensor cores with f32
/// accumulation), integers as a CUDA kernel. trans_a: A is stored batch x k x m; trans_b: B is batch x n x k.
void matmul(DType dtype, const void* a, const void* b, void* c, std::int64_t batch, std::int64_t m, std::int64_t k,
            std::int64_t n, bool trans_a, bool trans_b, int device, Precision precision = Precision::default_);
/// matmul (f32, bf16, f16; same layouts) plus a bias row (n elements of `dtype`, one per column
/// of C, the same for every row and batch item), as one cuBLASLt matmul with its BIAS epilogue
/// (f32 accumulation; f32 as matmul at `precision`, tensor cores for bf16/f16). Returns false, having run nothing, where cuBLASLt has no
/// algorithm for the call or refuses it (or another dtype, or k = 0): the caller then runs matmul
/// and the add. (No relu epilogue: cuBLASLt's turns NaN into 0, where max(NaN, 0) is NaN.)
bool matmul_bias(DType dtype, const void* a, const void* b, const void* bias, void* c, std::int64_t batch, std::int64_t m,
                 std::int64_t k, std::int64_t n, bool trans_a, bool trans_b, int device,
                 Precision precision = Precision::default_);
/// matmul (f32, bf16, f16; one matrix, no batch) that also writes the column sums of one operand
/// over k, a dense layer's bias gradient, as one cuBLASLt matmul with its BGRADA/BGRADB epilogue
/// (f32 accumulation; f32 as matmul at `precision`): with `sum_b`, sums[j] = sum over r of B[r][j]
/// for B stored k x n (trans_b false), n values; else sums[i] = sum over r of A[r][i] for A stored
/// k x m (trans_a true), m values; in `dtype`. Returns false, having run nothing, where cuBLASLt
/// has no algorithm for the call or refuses it (or another dtype or layout, or an empty product or
/// k = 0): the caller then runs matmul and the reduction.
bool matmul_bias_grad(DType dtype, const void* a, const void* b, void* c, void* sums, std::int64_t m, std::int64_t k,
                      std::int64_t n, bool trans_a, bool trans_b, bool sum_b, int device,
                      Precision precision = Precision::default_);
/// matmul_bias and matmul_bias_grad calls that ran on cuBLASLt so far (their fallback is quiet;
/// the GPU suite checks this).
std::int64_t cublaslt_calls();
/// Whether a cuBLASLt matmul's algorithm (matmul's, matmul_bias's, matmul_bias_grad's) is chosen,
/// for products of a GFLOP or more, by timing the heuristic's first 8 on the operands of each
/// plan's first call, as cuDNN's engines are (set_cudnn_autotune); smaller products, and all with
/// this off, take the heuristic's first. On by default; off when the environment sets
/// CANOPY_CUBLASLT_AUTOTUNE=0.
void set_cublaslt_autotune(bool on);
bool cublaslt_autotune();
/// Whether fused_elementwise runs `program` (no random streams, row steps or sums; bounded size).
bool fused_supported(const FusedProgram& program);
/// jit's fused elementwise program over n elements (as cpu::fused_elementwise): in[k] input k's
/// data, out[k] output k's. DeviceError for a program fused_supported rejects.
void fused_elementwise(const FusedProgram& program, std::span<const void* const> in, std::span<void* const> out,
                       std::int64_t n, int device);
/// fused_elementwise over several operand sets ("segments") at once: segment k runs programs[k]
/// over its programs[k]->elements elements, its inputs and outputs the next ones of in and out
/// (each segment as many as its program has). Every program must equal programs[0] but for its
/// element count. One launch of a generated kernel where it can (at most
/// fused_segments_capacity(*programs[0]) segments; 4-element vectors where every segment's
/// operands allow them), else fused_elementwise once per segment.
void fused_elementwise_segments(std::span<const FusedProgram* const> programs, std::span<const void* const> in,
                                std::span<void* const> out, int device);
/// Whether fused_elementwise runs a program as a kernel generated for it and compiled by NVRTC
/// (the default; CANOPY_CUDA_CODEGEN=0 turns it off) or always on the interpreter kernel.
void set_generated_kernels(bool on);
bool generated_kernels();
/// Fused calls (fused_elementwise, its segments, scalar programs) that ran a generated kernel so
/// far, and those that wanted one and ran the interpreter or each step's kernel instead (NVRTC
/// missing, or a compile or load that failed; logged once).
std::int64_t generated_kernel_calls();
std::int64_t generated_kernel_fallbacks();
/// Compiles the generated kernels of `programs` for `device` ahead of their first launch, side by
/// side on up to one thread per core, 8 at most (jit does this for a compiled program's fused
/// groups at its first call on a device), each for the layout of operands in device blocks of
/// their own (16-byte aligned, as the caching allocator and jit's arena give); `segmented`: the
/// programs of fused_elementwise_segments calls, whose kernel runs several segments; `scalars`:
/// scalar programs (scalar_program). A launch with another layout compiles its own kernel then.
/// Nothing where generated kernels are off or NVRTC is missing; a failure here is met again, and
/// reported, where the kernel launches.
void prepare_generated_fused(std::span<const FusedProgram* const> programs,
                             std::span<const FusedProgram* const> segmented,
                             std::span<const ScalarProgram* const> scalars, int device);
/// A scalar program (jit's fused_scalars) as one launch of its generated kernel, one thread: in[k]
/// holds input k's one element, out[k] receives step k's. Returns false, having run nothing, where
/// generated kernels are off, the program is not one the generator writes, or no kernel could be
/// had (NVRTC missing, a failed compile or load: counted by generated_kernel_fallbacks()); the
/// caller then runs each step's own kernel.
bool scalar_program(const ScalarProgram& program, std::span<const void* const> in, std::span<void* const> out,
                    int device);
/// softmax / log_softmax of a floating array along `axis` (computed in f64 for log and f64, f32
/// otherwise, as the CPU loops do).
void softmax(bool log, DType dtype, const void* in, void* out, const Shape& shape, int axis, int device);

}  // namespace canopy::kernels::cuda
