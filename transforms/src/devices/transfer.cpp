// Moving array buffers between host memory and GPUs: device_put's copies, host reads of GPU
// arrays, and uncommitted operands following a committed GPU partner.
#include "../core/array_impl.hpp"
#include "canopy/devices.hpp"
#include "canopy/kernels/cuda.hpp"
#include "runtime.hpp"

namespace canopy::detail {

// To this process's first CPU device, not default_device(): on a GPU pmap's threads that is the GPU.
Array host_copy(const Array& x) {
  return on_gpu(x) ? to_device_memory(x, Device::cpu(first_local_device()), false) : x;
}

Array to_device_memory(const Array& x, Device dev, bool committed) {
  const Device from = x.impl()->device;
  const bool same_memory = from == dev || (from.kind == Device::Kind::cpu && dev.kind == Device::Kind::cpu);
  if (same_memory) {
    auto impl = std::make_shared<ArrayImpl>(*x.impl());
    impl->device = dev;
    impl->committed = committed;
    return Array(std::move(impl));
  }
  const Aval& a = x.impl()->aval;
  const auto bytes = static_cast<std::size_t>(a.size()) * itemsize(a.dtype);
  Array y = make_concrete(a, dev, "device_put", committed);
  if (dev.kind == Device::Kind::cpu)
    kernels::cuda::copy_to_host(cdata(x), mutable_data(y), bytes, from.index);
  else if (from.kind == Device::Kind::cpu)
    kernels::cuda::copy_to_device(cdata(x), mutable_data(y), bytes, dev.index);
  else
    kernels::cuda::copy_device(cdata(x), from.index, mutable_data(y), dev.index, bytes);
  return y;
}

}  // namespace canopy::detail
