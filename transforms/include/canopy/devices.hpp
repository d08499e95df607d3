// The devices a process sees (jax.devices and friends), placing arrays on them (device_put), and
// the settings of the collectives that pmap's devices meet at.
//
// CPU devices are virtual: CANOPY_CPU_DEVICES=N (XLA's host-platform device count) gives N of
// them, all in host memory, each running its part of a pmap on its own persistent thread. Under
// `mpirun -np P` (when canopy is built with Open MPI) every process has its own N local devices
// and the device ids are global: process p holds cpu:p*N ... cpu:p*N+N-1.
//
// GPUs are `cuda:0` ... `cuda:G-1` (where canopy was built with the CUDA toolkit and the machine
// has a driver and GPUs): devices("cuda") lists them. New arrays still go to cpu:k by default;
// device_put(tree, Device::cuda(0)) moves a tree there, and every op on a committed cuda:0 array
// runs on that GPU, uncommitted operands (constants, scalars) moving to it.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "canopy/array.hpp"
#include "canopy/device.hpp"
#include "canopy/transforms/tree_arrays.hpp"

namespace canopy {

/// Every device of every process, by global id (jax.devices()).
std::vector<Device> devices();
/// The devices of one backend, "cpu" or "cuda" (also "gpu"): jax.devices(backend). The list of
/// cuda devices is empty where there are none (no GPU, no driver, or a build without CUDA);
/// gpu_unavailable_reason() says which. DeviceError for an unknown backend.
std::vector<Device> devices(std::string_view backend);
/// Why devices("cuda") is empty; empty when it is not.
std::string gpu_unavailable_reason();
/// This process's devices (jax.local_devices()).
std::vector<Device> local_devices();
/// Number of devices over all processes (jax.device_count()).
int device_count();
/// Number of this process's devices (jax.local_device_count()).
int local_device_count();
/// This process's rank among the processes of an `mpirun` (0 without MPI).
int process_index();
/// Number of processes (1 without MPI).
int process_count();

/// Sets the number of virtual CPU devices of this process, as CANOPY_CPU_DEVICES does before the
/// first use. Allowed while no pmap runs; arrays left on a device that no longer exists raise
/// DeviceError when used. Under MPI every process must set the same count (checked by pmap).
void set_cpu_device_count(int n);

/// How long a collective waits for the other devices (and processes) before it fails with a
/// DeviceError naming the collective and the devices that did not arrive; a failed or diverging
/// peer never hangs the program. Default 300 s, or CANOPY_COLLECTIVE_TIMEOUT_S.
void set_collective_timeout(std::chrono::milliseconds timeout);
std::chrono::milliseconds collective_timeout();

/// GPU verification: every kernel that runs on a GPU (eagerly, or as a step of a jitted program:
/// a fused elementwise chain or a matmul with its bias is one kernel, checked as a whole; with
/// CANOPY_JIT_FUSION=0 each primitive is checked on its own) is run again on the CPU with copies
/// of the same operands, and a result that differs beyond the tolerance below raises
/// DeviceMismatchError naming the primitive, its params, its operands, the first differing index
/// and both values. Costs a device-to-host copy of every operand and result and the CPU's work: a
/// debugging mode, off by default; on when the environment sets CANOPY_GPU_VERIFY=1. The setting
/// is the process's (a GpuVerifyScope changes it for every thread).
///
/// The tolerance, per element, between the GPU's result g and the CPU's c (the property the GPU
/// backend keeps; the GPU suite checks it): NaN matches NaN, infinities and integer, boolean and
/// key results are exact, and for floating results
///     |g - c| <= rtol(dtype) * (|c| + max|c| / 16) + 2 * min(10 * sqrt(n), n) * eps(accumulator) * m
/// where rtol is 1e-12 for f64, 2e-6 for f32 and 1e-2 for bf16 and f16 (the devices' math
/// libraries differ by a few units in the last place; max|c| is the largest finite magnitude in
/// the same output, a floor for elements near a zero of the function, such as log near 1, whose
/// error is relative to the argument rather than the result), and, for primitives that sum
/// (linear and bilinear ones: sums, contractions, convolutions, copies; and scatter-add), n is
/// the number of terms an element sums and m the sum of their magnitudes (the primitive applied
/// to the operands' absolute values): the two devices add in different orders, and in f32 (eps
/// 2^-24; f64 for f64 operands) each side's sum is within n * eps * m of the exact one in any
/// order, and within 10 * sqrt(n) * eps * m unless its roundings conspire (a chance below 1e-15
/// for a million terms). Everything else has n = m = 0. f32 products computed at Precision::high
/// (TF32 tensor cores, which keep 10 mantissa bits of each operand) add (2^-9 + 2^-20) * m: each
/// product may move by that much of its magnitude. A fused matmul or convolution with its bias
/// (dot_general_bias, conv_general_dilated_bias) adds half an ulp of its dtype of m in bf16 and
/// f16: the CPU rounds the product before adding the bias, a GPU rounds the sum once. A
/// convolution (with its bias or not) that cuDNN computed adds 16 * eps(accumulator) * max m, max m
/// the largest sum of magnitudes in the same output: an engine may compute it by a transform (FFT,
/// Winograd), whose rounding in an element comes from the sums it is transformed with (on an H200
/// such an engine gave -8e-10 for an element whose every product is zero, 0.2 units of the
/// largest sum).
void set_gpu_verify(bool on);
bool gpu_verify();
/// Sets GPU verification for a scope and restores the previous setting when it ends.
class GpuVerifyScope {
 public:
  explicit GpuVerifyScope(bool on = true) : previous_(gpu_verify()) { set_gpu_verify(on); }
  ~GpuVerifyScope() { set_gpu_verify(previous_); }
  GpuVerifyScope(const GpuVerifyScope&) = delete;
  GpuVerifyScope& operator=(const GpuVerifyScope&) = delete;

 private:
  bool previous_;
};

/// Returns once every process of the mpirun has called it (JAXline's rendezvous before exit, so
/// no process leaves while the leader still writes); returns at once in a single process. Every
/// process makes its cross-process calls (pmaps, process_sum, process_barrier) in the same order.
void process_barrier();

namespace detail {
/// GPU kernel calls checked against the CPU so far (what shows that verification ran).
std::int64_t gpu_verified_kernels();
/// The sum over processes of each process's x (see process_sum).
Array process_sum_array(const Array& x);
/// x on `device`, committed there (shares the buffer between CPU devices, which are all host
/// memory; copies to and from a GPU).
Array device_put_array(const Array& x, Device device);
/// x in host memory, uncommitted (a copy from a GPU; x itself on a CPU device).
Array device_get_array(const Array& x);
}  // namespace detail

/// jax.device_put: the tree with every Array leaf placed on `device` and committed to it. Arrays
/// committed to different devices never meet in one op (DeviceError naming the arguments and
/// their devices); uncommitted arrays (made without device_put) go wherever their partner is.
/// CPU devices share host memory, so placing an array there copies nothing; a copy to a GPU is
/// issued on the GPU's stream and the call returns before it ran (reads wait); a copy from a GPU
/// waits for it. Inside a
/// transformation, values are placed when they are computed: tracers pass through unchanged.
template <class T>
T device_put(const T& tree, Device device) {
  return tree_map(
      [&](const auto& leaf) {
        if constexpr (detail::is_array_v<decltype(leaf)>) return detail::device_put_array(leaf, device);
        else return leaf;
      },
      tree);
}

/// Across the processes of an mpirun: every process passes its own tree (the same structure,
/// shapes and dtypes everywhere) and gets, on every process, the tree whose Array leaves are the
/// sums over all processes (an MPI_Allreduce per leaf, in host memory; bool and 16-bit floats are
/// an UnimplementedRule). In a single process: the tree's values. Evaluation sums reduce with it.
template <class T>
T process_sum(const T& tree) {
  return tree_map(
      [&](const auto& leaf) {
        if constexpr (detail::is_array_v<decltype(leaf)>) return detail::process_sum_array(leaf);
        else return leaf;
      },
      tree);
}

/// jax.device_get: the tree with every Array leaf's values in host memory (on the default CPU
/// device, uncommitted); waits for the GPU work that computes them. Leaves already on a CPU
/// device are returned as they are.
template <class T>
T device_get(const T& tree) {
  return tree_map(
      [&](const auto& leaf) {
        if constexpr (detail::is_array_v<decltype(leaf)>) return detail::device_get_array(leaf);
        else return leaf;
      },
      tree);
}

}  // namespace canopy
