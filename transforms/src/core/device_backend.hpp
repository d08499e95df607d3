// Internal to transforms: the seam where a device kind plugs in its memory. Each kind fills one
// DeviceBackend in its own folder (src/backends/<kind>/) and is registered in device_backend.cpp;
// the rest of transforms allocates, copies, fills and reads device memory only through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "canopy/device.hpp"
#include "canopy/dtype.hpp"
#include "canopy/kernels/buffer.hpp"
#include "canopy/kernels/cpu.hpp"
#include "canopy/kernels/graph_edge.hpp"
#include "canopy/shape.hpp"

namespace canopy::detail {

/// One device kind: its names, its devices, and the operations on its memory. Pointers are
/// addresses in the kind's memory, `device` the index of one of this process's devices. Each
/// operation is ordered after the work issued to that device before it; host reads wait for it.
/// Every member is set (tests/device_backend_test.cpp checks it for each kind).
struct DeviceBackend {
  /// The kind's name in device names: `cpu`, `cuda` (cpu:0, cuda:1).
  std::string_view name;
  /// JAX's platform name for it, also accepted by Device::parse and devices(): `cpu`, `gpu`.
  std::string_view platform;
  /// Whether its buffers are host memory, shared by every device of the kind: host code reads
  /// them, arrays move between its devices without a copy, and jit runs its planned program
  /// (one host arena, donation) on them.
  bool host_memory = false;

  /// The global index of this process's first device of the kind, and how many it has.
  int (*first_local_device)() = nullptr;
  int (*local_device_count)() = nullptr;
  /// Why there are none ("this build of canopy has no CUDA backend ..."); empty when there are.
  std::string (*unavailable_reason)() = nullptr;
  /// The hint of the error for a device index the process has not.
  std::string_view more_devices_hint;

  /// `bytes` of the device's memory (uninitialised): ResourceError when it has not the memory.
  std::shared_ptr<kernels::Buffer> (*allocate)(std::size_t bytes, int device) = nullptr;
  /// `bytes` from src on src_device to dst on dst_device, two devices of this kind.
  void (*copy)(const void* src, int src_device, void* dst, int dst_device, std::size_t bytes) = nullptr;
  /// Host memory to the device's; `host` may be reused as soon as it returns, where it is
  /// pageable memory (every host buffer canopy allocates is).
  void (*write_from_host)(const void* host, void* dst, std::size_t bytes, int device) = nullptr;
  /// The device's memory to host memory; returns when the bytes are there.
  void (*read_to_host)(const void* src, void* host, std::size_t bytes, int device) = nullptr;
  /// Sets n elements of `itemsize` bytes to the element at host address `value`.
  void (*fill)(std::size_t itemsize, const void* value, void* out, std::int64_t n, int device) = nullptr;
  /// The elements of `shape` from `in` read with element strides in_strides (0 broadcasts,
  /// negative reverses) to `out` written with out_strides (transposes, slices, pad, concatenate).
  void (*copy_strided)(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides,
                       const Shape& shape, void* out, std::span<const std::int64_t> out_strides, int device) = nullptr;
  /// copy_strided into a contiguous `out`.
  void (*strided_copy)(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides,
                       const Shape& shape, void* out, int device) = nullptr;
  /// What a pmap's collectives compute where the devices' memory is their own (peer copies, then
  /// the combination on each device): n elements converted, and combined elementwise.
  void (*convert)(DType from, DType to, const void* in, void* out, std::int64_t n, int device) = nullptr;
  void (*combine)(kernels::BinaryOp op, DType dtype, const void* a, const void* b, void* out, std::int64_t n,
                  int device) = nullptr;

  /// Graphs, where the kind has them (null for the CPU's, whose kernels run as they are called):
  /// `record` runs `issue(context)`, recording the work it gives `device` (none of it runs) as a
  /// graph that keeps every block allocated meanwhile; null where that work cannot be recorded (a
  /// host read of device memory, a wait for the device). Its edges `in` and `out` are the blocks
  /// it reads its arguments from and writes its results to. `replay` issues one run of such a
  /// graph, which copies `sources[i]` into in-edge i's block first and out-edge j's block to
  /// `destinations[j]` last (a null address, or a source that is its block, copies nothing).
  std::shared_ptr<const void> (*record)(int device, void (*issue)(void* context), void* context,
                                        std::span<const kernels::GraphEdge> in,
                                        std::span<const kernels::GraphEdge> out) = nullptr;
  void (*replay)(const void* graph, std::span<const void* const> sources, std::span<void* const> destinations) = nullptr;
};

/// Device::Kind's values, in order.
inline constexpr Device::Kind kDeviceKinds[] = {Device::Kind::cpu, Device::Kind::cuda};
static_assert(std::size(kDeviceKinds) == Device::kinds, "every Device::Kind has a backend (and a kernel slot)");
/// The registered backends, indexed by Device::Kind (device_backend.cpp).
extern const DeviceBackend* const device_backends[std::size(kDeviceKinds)];

/// The backend of device kind `kind`.
inline const DeviceBackend& backend(Device::Kind kind) { return *device_backends[static_cast<std::size_t>(kind)]; }
/// Whether arrays on `d` live in memory of the device's own, which host code cannot read (a GPU's).
inline bool in_device_memory(Device d) { return !backend(d.kind).host_memory; }
/// Whether a buffer on `a` is usable on `b` as it is: the same device, or host memory both.
inline bool shares_memory(Device a, Device b) {
  return a == b || (backend(a.kind).host_memory && backend(b.kind).host_memory);
}
/// The kind named `name` (a backend's name or platform), or null.
const DeviceBackend* backend_named(std::string_view name, Device::Kind* kind = nullptr);

}  // namespace canopy::detail
