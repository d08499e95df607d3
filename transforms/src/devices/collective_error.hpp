// Internal to transforms: the error a device's collective raises because another device failed
// (the pmap rethrows that device's own error in preference).
#pragma once

#include "canopy/error.hpp"

namespace canopy::detail {

class CollectiveAborted : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

}  // namespace canopy::detail
