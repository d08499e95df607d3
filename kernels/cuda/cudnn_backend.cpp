// cuDNN's graph API plumbing (see cudnn_backend.hpp).
#include "cudnn_backend.hpp"

#include <mutex>
#include <string>
#include <vector>

#include "canopy/error.hpp"
#include "canopy/kernels/cuda_nn.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
bool cudnn_built() { return true; }
}  // namespace canopy::kernels::cuda

namespace canopy::kernels::cuda::cudnn {

void check(cudnnStatus_t status, std::string_view api) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  char message[512] = {};
  cudnnGetLastErrorString(message, sizeof message);
  if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    ::canopy::detail::raise<ResourceError>(api, "host memory", "", "is exhausted (cuDNN)");
  ::canopy::detail::raise<DeviceError>(api, "cuDNN call", "",
                                       ::canopy::detail::concat("failed: ", cudnnGetErrorString(status),
                                                                message[0] ? ": " : "", message));
}

Descriptor::Descriptor(cudnnBackendDescriptorType_t type) {
  check(cudnnBackendCreateDescriptor(type, &d_), "cudnnBackendCreateDescriptor");
}

Descriptor::~Descriptor() {
  if (d_) (void)cudnnBackendDestroyDescriptor(d_);
}

void Descriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count,
                     const void* values) {
  check(cudnnBackendSetAttribute(d_, name, type, count, values), "cudnnBackendSetAttribute");
}

void Descriptor::set(cudnnBackendAttributeName_t name, const Descriptor& value) {
  cudnnBackendDescriptor_t v = value.get();
  set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
}

void Descriptor::set(cudnnBackendAttributeName_t name, std::int64_t value) { set(name, CUDNN_TYPE_INT64, 1, &value); }

cudnnStatus_t Descriptor::finalize() { return cudnnBackendFinalize(d_); }

void Descriptor::finalize_or_throw(std::string_view api) { check(finalize(), api); }

bool data_type(DType dtype, cudnnDataType_t& out) {
  switch (dtype) {
    case DType::f32: out = CUDNN_DATA_FLOAT; return true;
    case DType::f64: out = CUDNN_DATA_DOUBLE; return true;
    case DType::f16: out = CUDNN_DATA_HALF; return true;
    case DType::bf16: out = CUDNN_DATA_BFLOAT16; return true;
    default: return false;
  }
}

cudnnHandle_t handle(int device) {
  struct Handles {
    std::vector<cudnnHandle_t> by_device;
    ~Handles() {
      for (cudnnHandle_t h : by_device)
        if (h) (void)cudnnDestroy(h);
    }
  };
  thread_local Handles handles;
  cudaStream_t s = detail::stream(device);  // also makes `device` current
  if (handles.by_device.size() <= static_cast<std::size_t>(device))
    handles.by_device.resize(static_cast<std::size_t>(device) + 1, nullptr);
  cudnnHandle_t& h = handles.by_device[static_cast<std::size_t>(device)];
  if (!h) {
    // Not inside a graph's recording: a failure there would turn cuDNN off for the process.
    detail::refuse_while_recording(device, "cudnnCreate");
    // cuDNN asks for handles to be created one at a time (its thread-safety notes).
    static std::mutex creating;
    std::lock_guard<std::mutex> lock(creating);
    if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) {
      h = nullptr;
      set_use_cudnn(false);
      return nullptr;
    }
  }
  check(cudnnSetStream(h, s), "cudnnSetStream");
  return h;
}

Descriptor device_properties_from_json(std::string_view json) {
  Descriptor d(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
  const std::string text(json);  // cuDNN reads a NUL-terminated string
  d.set(CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, static_cast<std::int64_t>(text.size() + 1), text.c_str());
  d.finalize_or_throw("cudnn device properties");
  return d;
}

}  // namespace canopy::kernels::cuda::cudnn
