// The train state a user owns (step, params, optimizer state, PRNG key, extra variables) and the
// step built from a loss function: value_and_grad with aux, an optional pmean over a named axis,
// the optimizer update and the key split (bobbin's TrainState and TrainingStepFnBuilder).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <canopy/array.hpp>
#include <canopy/device.hpp>
#include <canopy/ops.hpp>
#include <canopy/random.hpp>
#include <canopy/transforms/autodiff.hpp>

#include "canopy/train/optim/base.hpp"

namespace canopy {

/// No extra variables (and no aux output): a pytree without leaves.
struct Nothing {};

/// Everything a training run carries from step to step, one pytree: jit, vmap, checkpoints and
/// tree utilities treat it whole. `step` and `key` are Arrays, never ints, so a jitted step is
/// traced once, not once per step. An aggregate: extend it by putting your own struct in `extra`.
template <class Params, class OptState, class Extra = Nothing>
struct TrainState {
  Array step;  ///< i32 scalar: steps taken so far
  Params params;
  OptState opt_state;
  Array key;  ///< the PRNG key the next step splits
  Extra extra = {};
};

namespace detail {
/// `tree` with every host Array leaf whose buffer another handle also holds replaced by a copy:
/// a state that owns its buffers can be donated (donate_argnums) without deleting the caller's.
template <class T>
T own_buffers(T tree) {
  return optim::detail::map_arrays(
      [](const Array& x) {
        if (!x.valid() || x.is_tracer() || x.is_deleted() || x.impl().use_count() <= 1 ||
            x.device().kind != Device::Kind::cpu)
          return x;
        return array_from_data(x.raw_data(), x.dtype(), x.shape(), x.device());
      },
      tree);
}
}  // namespace detail

/// A state at step 0: the optimizer's init on `params`, and `key` for the steps to split. The
/// state owns its buffers: Array leaves of params, key and extra that the caller still holds (an
/// lvalue passed in) are copied, so a step that donates the state (donate_argnums) deletes the
/// state's buffers, not the caller's; pass them with std::move to skip the copy. (GPU arrays are
/// not copied: a caller who keeps them must not donate the state.)
template <class Params, class Tx, class Extra = Nothing>
auto init_train_state(Params params, const Tx& tx, Array key, Extra extra = {}) {
  params = detail::own_buffers(std::move(params));
  key = detail::own_buffers(std::move(key));
  extra = detail::own_buffers(std::move(extra));
  auto opt_state = tx.init(params);
  return TrainState<Params, decltype(opt_state), Extra>{scalar(std::int32_t{0}), std::move(params), std::move(opt_state),
                                                          std::move(key), std::move(extra)};
}

/// What a step reports besides the new state: the loss and the loss function's aux output.
template <class Aux = Nothing>
struct StepInfo {
  Array loss;
  Aux aux = {};
};

/// Options of make_train_step.
struct TrainStepOptions {
  /// Under vmap or pmap with this axis name, gradients, loss and the aux's floating-point leaves
  /// are averaged over it (pmean, as JAXline's steps pmean their scalars) before the update, so
  /// replicas stay equal and report the global batch's values. Integer and bool aux leaves (counts,
  /// masks) stay per replica; psum them in the loss function where a total is wanted.
  std::optional<std::string> axis_name = {};
};

namespace detail {
/// The loss function's result as {loss, aux}: a plain Array loss gets an empty aux.
template <class R>
auto as_loss_and_aux(R&& r) {
  if constexpr (is_pair_like<std::remove_cvref_t<R>>::value) return std::forward<R>(r);
  else return std::pair<Array, Nothing>{std::forward<R>(r), Nothing{}};
}
}  // namespace detail

/// The training step for `loss_fn(params, batch, key) -> loss` or `-> std::pair{loss, aux}`
/// (aux any pytree; see TrainStepOptions::axis_name for its reduction under pmap):
/// `step(state, batch) -> std::pair{next_state, StepInfo{loss, aux}}`. The state's key is split
/// into the key of this step (given to loss_fn) and the key kept for the next one; the step
/// counter, the optimizer state and the parameters advance. Wrap it in jit to compile it:
/// `auto step = jit(make_train_step(loss, optim::adam(1e-3)));`.
template <class LossFn, class Tx>
auto make_train_step(LossFn loss_fn, Tx tx, TrainStepOptions options = {}) {
  return [loss_fn = std::move(loss_fn), tx = std::move(tx), options](const auto& state, const auto& batch) {
    using State = std::remove_cvref_t<decltype(state)>;
    auto [next_key, step_key] = random::split2(state.key);
    auto objective = [&](const auto& params) { return detail::as_loss_and_aux(loss_fn(params, batch, step_key)); };
    auto [value, grads] = value_and_grad(objective, has_aux)(state.params);
    auto& [loss, aux] = value;
    if (options.axis_name) {
      grads = optim::detail::map_arrays([&](const Array& g) { return pmean(g, *options.axis_name); }, grads);
      loss = pmean(loss, *options.axis_name);
      aux = optim::detail::map_arrays(
          [&](const Array& a) { return is_floating(a.dtype()) ? pmean(a, *options.axis_name) : a; }, aux);
    }
    auto [updates, opt_state] = tx.update(grads, state.opt_state, state.params);
    State next{state.step + 1, optim::apply_updates(state.params, updates), std::move(opt_state), std::move(next_key),
               state.extra};
    using Aux = std::remove_cvref_t<decltype(aux)>;
    return std::pair<State, StepInfo<Aux>>{std::move(next), StepInfo<Aux>{loss, aux}};
  };
}

}  // namespace canopy
