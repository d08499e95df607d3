// Test helper: the number of virtual CPU devices set for one scope, the previous count restored.
#pragma once

#include <canopy/devices.hpp>

struct CpuDevices {
  int previous;
  explicit CpuDevices(int n) : previous(canopy::local_device_count()) { canopy::set_cpu_device_count(n); }
  ~CpuDevices() { canopy::set_cpu_device_count(previous); }
  CpuDevices(const CpuDevices&) = delete;
  CpuDevices& operator=(const CpuDevices&) = delete;
};
