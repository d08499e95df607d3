// The devices a process sees (jax.devices and friends), placing arrays on them (device_put), and
// the settings of the collectives that pmap's devices meet at.
//
// CPU devices are virtual: CANOPY_CPU_DEVICES=N (XLA's host-platform device count) gives N of
// them, all in host memory, each running its part of a pmap on its own persistent thread. Under
// `mpirun -np P` (when canopy is built with Open MPI) every process has its own N local devices
// and the device ids are global: process p holds cpu:p*N ... cpu:p*N+N-1.
#pragma once

#include <chrono>
#include <vector>

#include "canopy/array.hpp"
#include "canopy/device.hpp"
#include "canopy/transforms/tree_arrays.hpp"

namespace canopy {

/// Every device of every process, by global id (jax.devices()).
std::vector<Device> devices();
/// This process's devices (jax.local_devices()).
std::vector<Device> local_devices();
/// Number of devices over all processes (jax.device_count()).
int device_count();
/// Number of this process's devices (jax.local_device_count()).
int local_device_count();
/// This process's rank among the processes of an `mpirun` (0 without MPI).
int process_index();
/// Number of processes (1 without MPI).
int process_count();

/// Sets the number of virtual CPU devices of this process, as CANOPY_CPU_DEVICES does before the
/// first use. Allowed while no pmap runs; arrays left on a device that no longer exists raise
/// DeviceError when used. Under MPI every process must set the same count (checked by pmap).
void set_cpu_device_count(int n);

/// How long a collective waits for the other devices (and processes) before it fails with a
/// DeviceError naming the collective and the devices that did not arrive; a failed or diverging
/// peer never hangs the program. Default 300 s, or CANOPY_COLLECTIVE_TIMEOUT_S.
void set_collective_timeout(std::chrono::milliseconds timeout);
std::chrono::milliseconds collective_timeout();

namespace detail {
/// x on `device`, committed there (shares the buffer: every CPU device is host memory).
Array device_put_array(const Array& x, Device device);
}  // namespace detail

/// jax.device_put: the tree with every Array leaf placed on `device` and committed to it. Arrays
/// committed to different devices never meet in one op (DeviceError naming the arguments and
/// their devices); uncommitted arrays (made without device_put) go wherever their partner is.
/// CPU devices share host memory, so placing an array there copies nothing. Inside a
/// transformation, values are placed when they are computed: tracers pass through unchanged.
template <class T>
T device_put(const T& tree, Device device) {
  return tree_map(
      [&](const auto& leaf) {
        if constexpr (detail::is_array_v<decltype(leaf)>) return detail::device_put_array(leaf, device);
        else return leaf;
      },
      tree);
}

}  // namespace canopy
