// Device names: `cpu:k` and `cuda:k`. CPU devices are virtual (CANOPY_CPU_DEVICES of them per
// process, all in host memory); `cuda:k` are the GPUs of a build with the CUDA backend
// (<canopy/devices.hpp> lists both). Using a cuda:k the process has not is a DeviceError.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

namespace canopy {

/// Where an array's buffer lives.
struct Device {
  /// Backend kind.
  enum class Kind : unsigned char { cpu, cuda };
  /// How many kinds there are: a primitive's kernel table has one slot per kind.
  static constexpr std::size_t kinds = 2;
  Kind kind = Kind::cpu;
  int index = 0;

  /// `cpu:k`.
  static constexpr Device cpu(int k = 0) { return {Kind::cpu, k}; }
  /// `cuda:k`.
  static constexpr Device cuda(int k = 0) { return {Kind::cuda, k}; }
  /// Parses `cpu`, `cpu:1`, `cuda:0`; throws canopy::DeviceError otherwise.
  static Device parse(std::string_view s);
  friend constexpr bool operator==(Device, Device) = default;
};

/// `cpu:0`.
std::string to_string(Device d);

/// The device this thread's new arrays go to: on a pmap's device thread that device (its GPU in
/// a pmap on_devices), on any other thread this process's first device (cpu:0 without MPI).
Device default_device();
inline std::ostream& operator<<(std::ostream& os, Device d) { return os << to_string(d); }

}  // namespace canopy
