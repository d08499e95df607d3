// The cuda device kind: this process's GPUs, their memory, copies and graphs on kernels/cuda (its
// caching allocator, one stream per device). In a build without CUDA the same calls find no
// device and raise the DeviceError of kernels/cuda/unavailable.cpp.
#include "../../core/device_backend.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_graph.hpp"

namespace canopy::detail {
namespace {

namespace cuda = kernels::cuda;

int first_device() { return 0; }

void strided_copy(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides, const Shape& shape,
                  void* out, int device) {
  cuda::copy_strided(itemsize, in, in_strides, shape, out, contiguous_strides(shape), device);
}

void combine(kernels::BinaryOp op, DType dtype, const void* a, const void* b, void* out, std::int64_t n,
             int device) {
  const Shape shape{n};
  cuda::binary(op, dtype, a, shape, b, shape, out, shape, device);
}

std::shared_ptr<const void> record(int device, void (*issue)(void*), void* context, std::span<const kernels::GraphEdge> in,
                                   std::span<const kernels::GraphEdge> out) {
  return cuda::record(device, [&] { issue(context); }, in, out);
}
void replay(const void* graph, std::span<const void* const> sources, std::span<void* const> destinations) {
  cuda::replay(*static_cast<const cuda::Graph*>(graph), sources, destinations);
}

}  // namespace

extern constinit const DeviceBackend cuda_backend;
constinit const DeviceBackend cuda_backend{
    .name = "cuda",
    .platform = "gpu",
    .host_memory = false,
    .first_local_device = first_device,
    .local_device_count = cuda::device_count,
    .unavailable_reason = cuda::unavailable_reason,
    .more_devices_hint = "devices(\"cuda\") lists this process's GPUs",
    .allocate = cuda::allocate,
    .copy = cuda::copy_device,
    .write_from_host = cuda::copy_to_device,
    .read_to_host = cuda::copy_to_host,
    .fill = cuda::fill,
    .copy_strided = cuda::copy_strided,
    .strided_copy = strided_copy,
    .convert = cuda::convert,
    .combine = combine,
    .record = record,
    .replay = replay,
};

}  // namespace canopy::detail
