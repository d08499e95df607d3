// The cpu device kind: CANOPY_CPU_DEVICES virtual devices per process, all in host memory, whose
// copies, fills and strided copies are the CPU loops of kernels/cpu.
#include <cstring>

#include "../../core/device_backend.hpp"
#include "../../devices/runtime.hpp"
#include "canopy/devices.hpp"
#include "canopy/kernels/cpu_indexing.hpp"

namespace canopy::detail {
namespace {

std::string no_reason() { return {}; }

std::shared_ptr<kernels::Buffer> allocate(std::size_t bytes, int) { return kernels::Buffer::allocate(bytes); }

void copy(const void* src, int, void* dst, int, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
void copy_host(const void* src, void* dst, std::size_t bytes, int) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void fill(std::size_t itemsize, const void* value, void* out, std::int64_t n, int) {
  kernels::cpu::fill(itemsize, value, out, n);
}

void copy_strided(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides, const Shape& shape,
                  void* out, std::span<const std::int64_t> out_strides, int) {
  kernels::cpu::copy_strided(itemsize, in, in_strides, shape, out, out_strides);
}

void strided_copy(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides, const Shape& shape,
                  void* out, int) {
  kernels::cpu::strided_copy(itemsize, in, in_strides, shape, out);
}

void convert(DType from, DType to, const void* in, void* out, std::int64_t n, int) {
  kernels::cpu::convert(from, to, in, out, n);
}

void combine(kernels::BinaryOp op, DType dtype, const void* a, const void* b, void* out, std::int64_t n, int) {
  const Shape shape{n};
  kernels::cpu::binary(op, dtype, a, shape, b, shape, out, shape);
}

}  // namespace

extern constinit const DeviceBackend cpu_backend;
constinit const DeviceBackend cpu_backend{
    .name = "cpu",
    .platform = "cpu",
    .host_memory = true,
    .first_local_device = first_local_device,
    .local_device_count = local_device_count,
    .unavailable_reason = no_reason,
    .more_devices_hint = "set CANOPY_CPU_DEVICES (or set_cpu_device_count) for more",
    .allocate = allocate,
    .copy = copy,
    .write_from_host = copy_host,
    .read_to_host = copy_host,
    .fill = fill,
    .copy_strided = copy_strided,
    .strided_copy = strided_copy,
    .convert = convert,
    .combine = combine,
};

}  // namespace canopy::detail
