// The registry of device kinds: one line per backend, in Device::Kind's order. A backend is
// constant-initialised in its folder (src/backends/<kind>/), so arrays made during static
// initialisation find it too.
#include "device_backend.hpp"

namespace canopy::detail {

extern constinit const DeviceBackend cpu_backend;   // backends/cpu/memory.cpp
extern constinit const DeviceBackend cuda_backend;  // backends/cuda/memory.cpp

constinit const DeviceBackend* const device_backends[std::size(kDeviceKinds)] = {&cpu_backend, &cuda_backend};

const DeviceBackend* backend_named(std::string_view name, Device::Kind* kind) {
  for (Device::Kind k : kDeviceKinds) {
    const DeviceBackend& b = backend(k);
    if (name != b.name && name != b.platform) continue;
    if (kind) *kind = k;
    return &b;
  }
  return nullptr;
}

}  // namespace canopy::detail
