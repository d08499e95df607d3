// The type-erased core of pmap: checking and splitting the mapped inputs across the local
// devices, binding the axis while the per-device program is traced, and running that program
// on every device thread with the collectives' rendezvous, its outputs stacked again.
// <canopy/transforms/pmap.hpp> builds the pytree front end on top.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "canopy/array.hpp"
#include "canopy/device.hpp"
#include "canopy/core/jit.hpp"

namespace canopy::detail {

/// A pmap axis: its name and its size over every process (part of the per-device program's key).
struct PmapAxis {
  std::string name;
  std::int64_t size = 0;
};

/// Binds `axis` for the scope's lifetime on this thread, so that the per-device program traced
/// inside sees its collectives' axis (all_gather's shape rule reads the size).
class PmapAxisBinding {
 public:
  explicit PmapAxisBinding(const PmapAxis& axis);
  ~PmapAxisBinding();
  PmapAxisBinding(const PmapAxisBinding&) = delete;
  PmapAxisBinding& operator=(const PmapAxisBinding&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Lets on_devices name one GPU several times (off by default, as in jax): the GPU suite runs a
/// two-device pmap, its meetings, peer copies and row indexing, on a one-GPU machine.
void allow_repeated_pmap_devices(bool on);

/// Whether pmap computes by vmap on the calling thread: a transformation is tracing (an input is
/// a tracer or one is current) or jit is disabled.
bool pmap_runs_as_vmap(const Arrays& xs);

/// The devices of a pmap: `devices` when given (on_devices: GPUs of this process), else this
/// process's CPU devices.
using PmapDevices = std::optional<std::vector<Device>>;

/// The size of the mapped axis: every mapped input has it (ShapeError naming two that differ),
/// it fits on the devices (DeviceError) and, under mpirun, equals the local device count.
/// DeviceError for a `devices` list that is empty, holds a non-GPU or a repeat, or is used under
/// mpirun. `names` gives the inputs' key paths, called only for an error message.
std::int64_t pmap_axis_size(const Arrays& xs, const std::vector<std::optional<int>>& axes,
                            const std::function<std::vector<std::string>()>& names, const PmapDevices& devices);

/// What device k sees: slice k of each mapped input (along its axis; without a copy when the axis
/// is the leading one and the input is already there) and every unmapped input whole, committed
/// to device k.
std::vector<Arrays> shard_inputs(const Arrays& xs, const std::vector<std::optional<int>>& axes, std::int64_t n,
                                 const PmapDevices& devices);

/// Runs `exe` on each device's inputs on that device's thread, with `axis_name` bound to the
/// devices; each output stacked along its out axis (on the first GPU of `devices`, else the
/// default device), or device 0's value when that is none.
Arrays run_pmapped(const std::shared_ptr<const Executable>& exe, const std::vector<Arrays>& per_device,
                   const std::string& axis_name, const std::vector<std::optional<int>>& out_axes,
                   const PmapDevices& devices);

}  // namespace canopy::detail
