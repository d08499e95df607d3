// Data parallelism's key handling, as JAXline does it: inside a pmapped step, a replicated key
// made the same or different across processes and across devices (specialize_rng_host_device).
#pragma once

#include <string>

#include "canopy/devices.hpp"
#include "canopy/ops.hpp"
#include "canopy/random.hpp"

namespace canopy {

/// Which replicas draw the same random numbers (JAXline's random_mode_train / random_mode_eval).
enum class KeyMode {
  same_host_same_device,      ///< every replica the same
  unique_host_same_device,    ///< one stream per process, shared by its devices
  same_host_unique_device,    ///< one stream per device position, the same on every process
  unique_host_unique_device,  ///< one stream per device (JAXline's default for training)
};

/// `key` folded with the process index and/or the device's index along `axis_name` (call it
/// inside the pmap over that axis). The result depends only on the key, the mode and where it
/// runs, so a restarted job draws the same numbers.
inline Array specialize_key(const Array& key, KeyMode mode, const std::string& axis_name) {
  Array k = key;
  if (mode == KeyMode::unique_host_same_device || mode == KeyMode::unique_host_unique_device)
    k = random::fold_in(k, process_index());
  if (mode == KeyMode::same_host_unique_device || mode == KeyMode::unique_host_unique_device)
    k = random::fold_in(k, axis_index(axis_name).astype(DType::u32));
  return k;
}

}  // namespace canopy
