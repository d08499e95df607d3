// Internal to kernels/cuda: cuDNN's graph (backend) API as canopy uses it. Owned descriptors,
// status checks that become canopy errors, a cuDNN handle per thread and device, and what
// heuristics and execution plans are built for (a handle, or a device's properties).
//
// Why the graph API: cuDNN 9 deprecates the legacy convolution and pooling calls
// (cudnnConvolutionForward and its descriptors carry CUDNN_DEPRECATED); the graph API takes any
// dims and strides per tensor (canopy's operands keep their own layouts), asymmetric padding, and
// since 9.8 builds plans for a device-properties descriptor, which is what lets the CPU suite
// build real execution plans for an H100 on a machine without a GPU.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

#include <cudnn.h>

#include "canopy/dtype.hpp"

namespace canopy::kernels::cuda::cudnn {

/// DeviceError naming `api`, cuDNN's status and its last error message, unless `status` is success.
void check(cudnnStatus_t status, std::string_view api);

/// An owned backend descriptor (destroyed with it); move-only.
class Descriptor {
 public:
  Descriptor() = default;
  explicit Descriptor(cudnnBackendDescriptorType_t type);
  Descriptor(Descriptor&& other) noexcept : d_(std::exchange(other.d_, nullptr)) {}
  Descriptor& operator=(Descriptor&& other) noexcept {
    std::swap(d_, other.d_);
    return *this;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor();

  cudnnBackendDescriptor_t get() const { return d_; }
  /// Sets an attribute (DeviceError on a refused value: these describe canopy's own problem).
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count, const void* values);
  void set(cudnnBackendAttributeName_t name, const Descriptor& value);
  void set(cudnnBackendAttributeName_t name, std::int64_t value);
  /// cudnnBackendFinalize's status: not every problem has an engine, so callers decide.
  cudnnStatus_t finalize();
  /// finalize(), checked.
  void finalize_or_throw(std::string_view api);

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

/// cuDNN's data type for `dtype` (f32, f64, f16, bf16), or false for the others.
bool data_type(DType dtype, cudnnDataType_t& out);

/// The calling thread's cuDNN handle for `device`, bound to the device's stream (a handle must not
/// be used by two threads at once); created on first use. Null when cuDNN cannot start (its
/// sub-libraries fail to load, an unsupported GPU): cuDNN is then turned off (set_use_cudnn) and
/// the direct kernels run everything.
cudnnHandle_t handle(int device);
/// A device-properties descriptor from cuDNN's JSON form (no GPU needed: for building plans
/// ahead of time, and for the CPU suite).
Descriptor device_properties_from_json(std::string_view json);

/// What a plan is built for: a GPU through a handle (how kernels run), or a device described by
/// its properties, without a GPU (how the CPU suite builds plans; cuDNN then executes a plan only
/// after serializing it and loading it with a handle, which canopy does not do).
struct Target {
  cudnnHandle_t handle = nullptr;
  const Descriptor* device_properties = nullptr;
};

}  // namespace canopy::kernels::cuda::cudnn
