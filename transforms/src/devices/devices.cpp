// The device list (CANOPY_CPU_DEVICES virtual CPU devices per process, global ids across the
// processes of an mpirun), default placement, device_put and the collective timeout.
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string>

#include "../core/array_impl.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/devices.hpp"
#include "canopy/error.hpp"
#include "process_group.hpp"
#include "canopy/kernels/environment.hpp"
#include "runtime.hpp"

namespace canopy {
namespace {

constexpr int kMaxCpuDevices = 1024;

std::atomic<int>& cpu_device_count() {
  static std::atomic<int> n{static_cast<int>(kernels::env_integer("CANOPY_CPU_DEVICES", 1, 1, kMaxCpuDevices))};
  return n;
}

std::atomic<long long>& timeout_ms() {
  static std::atomic<long long> ms{1000LL * kernels::env_integer("CANOPY_COLLECTIVE_TIMEOUT_S", 300, 1, 1 << 24)};
  return ms;
}

}  // namespace

int local_device_count() { return cpu_device_count().load(); }
int process_index() { return detail::processes::rank(); }
int process_count() { return detail::processes::size(); }
int device_count() { return local_device_count() * process_count(); }

std::vector<Device> devices() {
  std::vector<Device> out;
  for (int k = 0; k < device_count(); ++k) out.push_back(Device::cpu(k));
  return out;
}

std::vector<Device> devices(std::string_view backend) {
  Device::Kind kind{};
  const detail::DeviceBackend* b = detail::backend_named(backend, &kind);
  if (!b) detail::raise<DeviceError>("devices", "backend", backend, "is not known", "use \"cpu\" or \"cuda\"");
  // CPU devices are listed over every process (jax.devices()); the others are this process's.
  if (b->host_memory) return devices();
  std::vector<Device> out;
  for (int k = 0; k < b->local_device_count(); ++k) out.push_back(Device{kind, b->first_local_device() + k});
  return out;
}

std::string gpu_unavailable_reason() { return detail::backend(Device::Kind::cuda).unavailable_reason(); }

std::vector<Device> local_devices() {
  std::vector<Device> out;
  const int base = detail::first_local_device();
  for (int k = 0; k < local_device_count(); ++k) out.push_back(Device::cpu(base + k));
  return out;
}

void set_cpu_device_count(int n) {
  if (n < 1 || n > kMaxCpuDevices)
    detail::raise<DeviceError>("set_cpu_device_count", "count", "", detail::concat("is ", n),
                               detail::concat("give an integer in [1, ", kMaxCpuDevices, "]"));
  if (detail::on_device_thread())
    detail::raise<DeviceError>("set_cpu_device_count", "caller", "", "is a pmap's device thread",
                               "change the device count between pmaps");
  cpu_device_count() = n;
}

namespace {
thread_local std::optional<Device> scoped_default;  // DefaultDeviceScope's device, if any
}  // namespace

Device default_device() {
  if (scoped_default) return *scoped_default;
  const int k = detail::device_thread_index();
  return Device::cpu(detail::first_local_device() + (k < 0 ? 0 : k));
}

void set_collective_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0)
    detail::raise<DeviceError>("set_collective_timeout", "timeout", "", detail::concat("is ", timeout.count(), " ms"),
                               "give a positive duration");
  timeout_ms() = timeout.count();
}
std::chrono::milliseconds collective_timeout() { return std::chrono::milliseconds(timeout_ms().load()); }

namespace detail {

DefaultDeviceScope::DefaultDeviceScope(Device device) : previous_(scoped_default) { scoped_default = device; }
DefaultDeviceScope::~DefaultDeviceScope() { scoped_default = previous_; }

int first_local_device() { return processes::rank() * local_device_count(); }

void require_local_device(std::string_view api, Device d) {
  const DeviceBackend& b = backend(d.kind);
  const int first = b.first_local_device(), n = b.local_device_count();
  if (d.index >= first && d.index < first + n) return;
  if (n == 0) raise<DeviceError>(api, "device", to_string(d), "is not available", b.unavailable_reason());
  const std::string have =
      n == 1 ? to_string(Device{d.kind, first}) : concat(to_string(Device{d.kind, first}), "..", to_string(Device{d.kind, first + n - 1}));
  raise<DeviceError>(api, "device", to_string(d), concat("is not one of this process's devices (", have, ")"),
                     std::string(b.more_devices_hint));
}

Array device_put_array(const Array& x, Device device) {
  require_local_device("device_put", device);
  if (!x.valid()) raise<TypeError>("device_put", "input", "", "is an empty Array handle");
  if (x.is_tracer()) return x;
  if (x.is_deleted()) require_live("device_put", "argument", x);
  return to_device_memory(x, device, true);
}

Array device_get_array(const Array& x) {
  if (!x.valid()) raise<TypeError>("device_get", "input", "", "is an empty Array handle");
  if (x.is_tracer()) raise<TracerError>("device_get", "array", to_string(x.aval()), "is a tracer: its values are not known while tracing");
  if (x.is_deleted()) require_live("device_get", "argument", x);
  return host_copy(x);
}

}  // namespace detail
}  // namespace canopy
