// Internal to transforms: where the next Executable::run on this thread writes its results.
// pmap's device threads name the rows of the stacked outputs, so each device's results are
// written there by the kernels that compute them instead of being copied in afterwards.
#pragma once

#include <memory>
#include <vector>

#include "canopy/kernels/buffer.hpp"

namespace canopy::detail {

/// One buffer per program result (null: anywhere); a buffer of another size is ignored.
using ResultDestinations = std::vector<std::shared_ptr<kernels::Buffer>>;

/// For its lifetime, the next CPU run of an Executable on this thread (not a nested one) writes
/// the results that its own kernels compute into `destinations`.
class ResultDestinationScope {
 public:
  explicit ResultDestinationScope(const ResultDestinations* destinations);
  ~ResultDestinationScope();
  ResultDestinationScope(const ResultDestinationScope&) = delete;
  ResultDestinationScope& operator=(const ResultDestinationScope&) = delete;

 private:
  const ResultDestinations* previous_;
};

/// The destinations of the enclosing scope, handed out once (nested runs get none).
const ResultDestinations* take_result_destinations();

}  // namespace canopy::detail
