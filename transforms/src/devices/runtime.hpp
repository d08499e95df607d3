// Internal to transforms: the device threads that run a pmap's per-device programs, the axis
// contexts through which the collectives find their devices, and the process group (MPI).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "canopy/device.hpp"

namespace canopy::detail {

class Rendezvous;

/// A pmap axis as seen by the code running on one of its devices (or, with index -1, by the
/// tracing of the per-device program, which only needs the size).
struct AxisContext {
  std::string name;
  std::int64_t size = 0;  ///< devices along the axis, over every process
  int index = -1;         ///< this device's position along the axis (global); -1 while tracing
  int local_index = -1;   ///< this device's position among the process's devices
  std::shared_ptr<Rendezvous> rendezvous;
};

/// Makes `context` visible to find_axis on this thread for the scope's lifetime.
class AxisScope {
 public:
  explicit AxisScope(const AxisContext& context);
  ~AxisScope();
  AxisScope(const AxisScope&) = delete;
  AxisScope& operator=(const AxisScope&) = delete;
};
/// The innermost axis named `name` this thread is inside (pmap tracing or running), or null.
const AxisContext* find_axis(std::string_view name);

/// Runs body(k) for k in [0, n) on local device k's persistent thread and waits for all of them.
/// The kernels of each device thread use (the caller's kernel threads) / n OpenMP threads, at
/// least one. The first error is rethrown, a root cause in preference to the errors other devices
/// raised because it aborted their collectives. One such run at a time per process.
void run_on_devices(int n, const std::function<void(int)>& body);
/// Whether this thread is one of the device threads (pmap cannot nest).
bool on_device_thread();
/// The local index of the device whose thread this is, -1 on any other thread.
int device_thread_index();

/// Makes `device` this thread's default device for the scope's lifetime: a pmap over GPUs gives
/// device thread k its GPU, so that what its program makes from no operand (axis_index, iota)
/// is made there.
class DefaultDeviceScope {
 public:
  explicit DefaultDeviceScope(Device device);
  ~DefaultDeviceScope();
  DefaultDeviceScope(const DefaultDeviceScope&) = delete;
  DefaultDeviceScope& operator=(const DefaultDeviceScope&) = delete;

 private:
  std::optional<Device> previous_;
};

/// Global id of this process's first device.
int first_local_device();
/// Whether `d` is a device of this process (DeviceError names `api` otherwise).
void require_local_device(std::string_view api, Device d);

}  // namespace canopy::detail
