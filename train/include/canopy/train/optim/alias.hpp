// optax's aliases: sgd, adam, adamw and rmsprop, each the chain optax builds, in optax's order,
// so states and numbers match optax's (optax/_src/alias.py).
#pragma once

#include <string_view>

#include "canopy/train/optim/base.hpp"
#include "canopy/train/optim/transform.hpp"

namespace canopy::optim {

/// A momentum buffer for sgd and rmsprop (optax's `momentum=`, `nesterov=`).
struct Momentum {
  double decay = 0.9;
  bool nesterov = false;
};

/// chain(identity, scale_by_learning_rate(lr)): plain SGD, no momentum buffer (optax.sgd, momentum=None).
template <LearningRate LR>
auto sgd(const LR& learning_rate) {
  return chain(identity(), learning_rate_scale(learning_rate));
}
/// chain(trace(momentum), scale_by_learning_rate(lr)) (optax.sgd with momentum).
template <LearningRate LR>
auto sgd(const LR& learning_rate, Momentum momentum) {
  return chain(trace(momentum.decay, momentum.nesterov), learning_rate_scale(learning_rate));
}

/// chain(scale_by_adam, scale_by_learning_rate(lr)) (optax.adam; nesterov = optax.nadam).
template <LearningRate LR>
auto adam(const LR& learning_rate, AdamOptions o = {}) {
  return chain(scale_by_adam(o), learning_rate_scale(learning_rate));
}

/// Options of adamw.
struct AdamWOptions {
  AdamOptions adam = {};
  double weight_decay = 1e-4;
  Mask mask = {};  ///< leaves to decay (empty: all), e.g. `[](auto p) { return !p.ends_with("/b"); }`
};
/// chain(scale_by_adam, add_decayed_weights(wd, mask), scale_by_learning_rate(lr)): decay decoupled
/// from the moments and applied before the rate is multiplied in (optax.adamw).
template <LearningRate LR>
auto adamw(const LR& learning_rate, AdamWOptions o = {}) {
  Mask mask = o.mask ? o.mask : Mask([](std::string_view) { return true; });
  return chain(scale_by_adam(o.adam), add_decayed_weights(o.weight_decay, std::move(mask)),
               learning_rate_scale(learning_rate));
}

/// chain(scale_by_rms, scale_by_learning_rate(lr), identity) (optax.rmsprop: uncentered, eps
/// inside the square root, no momentum).
template <LearningRate LR>
auto rmsprop(const LR& learning_rate, RmsOptions o = {}) {
  return chain(scale_by_rms(o), learning_rate_scale(learning_rate), identity());
}
/// rmsprop with a momentum trace after the rate scaling, as optax orders it.
template <LearningRate LR>
auto rmsprop(const LR& learning_rate, RmsOptions o, Momentum momentum) {
  return chain(scale_by_rms(o), learning_rate_scale(learning_rate), trace(momentum.decay, momentum.nesterov));
}

}  // namespace canopy::optim
