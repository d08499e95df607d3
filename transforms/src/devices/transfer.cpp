// Moving and filling array buffers in whatever memory they are in, through their devices'
// backends: device_put's copies, host reads of device arrays, uncommitted operands following a
// committed partner, and the copies of the data-movement kernels.
#include <vector>

#include "../core/array_impl.hpp"
#include "canopy/devices.hpp"
#include "runtime.hpp"

namespace canopy::detail {

// To this process's first CPU device, not default_device(): on a GPU pmap's threads that is the GPU.
Array host_copy(const Array& x) {
  return in_device_memory(x) ? to_device_memory(x, Device::cpu(first_local_device()), false) : x;
}

Array to_device_memory(const Array& x, Device dev, bool committed) {
  if (shares_memory(x.impl()->device, dev)) {
    auto impl = std::make_shared<ArrayImpl>(*x.impl());
    impl->device = dev;
    impl->committed = committed;
    return Array(std::move(impl));
  }
  const Aval& a = x.impl()->aval;
  Array y = make_concrete(a, dev, "device_put", committed);
  copy_bytes(y, 0, x, 0, static_cast<std::size_t>(a.size()) * itemsize(a.dtype));
  return y;
}

void copy_bytes(const Array& dst, std::size_t dst_offset, const Array& src, std::size_t src_offset, std::size_t bytes) {
  if (bytes == 0) return;
  auto* d = static_cast<char*>(mutable_data(dst)) + dst_offset;
  const auto* s = static_cast<const char*>(cdata(src)) + src_offset;
  const Device to = dst.impl()->device, from = src.impl()->device;
  const DeviceBackend &into = backend(to.kind), &out_of = backend(from.kind);
  if (to.kind == from.kind) {
    into.copy(s, from.index, d, to.index, bytes);
  } else if (out_of.host_memory) {
    into.write_from_host(s, d, bytes, to.index);
  } else if (into.host_memory) {
    out_of.read_to_host(s, d, bytes, from.index);
  } else {  // between two kinds of device memory: through the host
    std::vector<char> staged(bytes);
    out_of.read_to_host(s, staged.data(), bytes, from.index);
    into.write_from_host(staged.data(), d, bytes, to.index);
  }
}

void strided_copy(const Array& out, std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides,
                  const Shape& shape) {
  const Device dev = out.impl()->device;
  backend(dev.kind).strided_copy(itemsize, in, in_strides, shape, mutable_data(out), dev.index);
}

void copy_strided(const Array& out, std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides,
                  const Shape& shape, void* out_data, std::span<const std::int64_t> out_strides) {
  const Device dev = out.impl()->device;
  backend(dev.kind).copy_strided(itemsize, in, in_strides, shape, out_data, out_strides, dev.index);
}

void fill(const Array& out, std::size_t itemsize, const void* value, std::int64_t n) {
  const Device dev = out.impl()->device;
  backend(dev.kind).fill(itemsize, value, mutable_data(out), n, dev.index);
}

}  // namespace canopy::detail
