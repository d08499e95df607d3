// The type-erased core of pure_callback: host code over concrete arrays, applied as a primitive
// so that every transformation can stage, batch or reject it. <canopy/transforms/callback.hpp>
// is the pytree front end.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "canopy/array.hpp"

namespace canopy::detail {

/// A host function of concrete Arrays. `vectorized`: under vmap it is called once with every
/// argument batched along a new leading axis and returns results batched the same way.
struct HostCallback {
  std::string name = "callback";
  bool vectorized = false;
  std::function<Arrays(const Arrays&)> fn;
};

/// Applies `callback` to `args` through the trace stack; its results have `result_avals`.
Arrays bind_pure_callback(std::shared_ptr<const HostCallback> callback, std::vector<Aval> result_avals,
                          std::span<const Array> args);

}  // namespace canopy::detail
