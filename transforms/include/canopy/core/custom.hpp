// Functions with user-written derivative rules (custom_jvp, custom_vjp) as the traces see
// them: a higher-order application that each trace processes its own way (jvp uses the rule,
// vmap batches the function and its rules, eval just calls the function).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <utility>

#include "canopy/core/autodiff.hpp"

namespace canopy::detail {

/// f with its custom rule, on flat Arrays. Exactly one of `jvp` or (`fwd`, `bwd`) is set.
struct CustomRule {
  std::string name;  ///< for error messages: "custom_jvp", "custom_vjp", "checkpoint"
  FlatFn fun;
  /// custom_jvp: (primals, tangents) -> (outputs, output tangents); zero tangents are real zeros.
  std::function<std::pair<Arrays, Arrays>(const Arrays&, const Arrays&)> jvp;
  /// custom_vjp forward pass: primals -> (outputs, residuals).
  std::function<std::pair<Arrays, Arrays>(const Arrays&)> fwd;
  /// custom_vjp backward pass: (residuals, output cotangents) -> input cotangents.
  std::function<Arrays(const Arrays&, const Arrays&)> bwd;
};

/// Applies `rule` to `in` through the innermost trace among them and the current one.
Arrays bind_custom(const CustomRule& rule, std::span<const Array> in);

}  // namespace canopy::detail
