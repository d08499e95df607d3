// The gradient transformations optax's aliases are built from (optax/_src/transform.py,
// transforms/_clipping.py, transforms/_masking.py): each a small value type with init/update.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <canopy/array.hpp>
#include <canopy/numpy.hpp>
#include <canopy/ops.hpp>

#include "canopy/train/optim/base.hpp"
#include "canopy/train/optim/schedules.hpp"
#include "canopy/train/tree_utils.hpp"

namespace canopy::optim {

namespace detail {
/// optax's update_moment: (1 - decay)·g + decay·moment.
inline Array update_moment(const Array& g, const Array& moment, double decay) {
  return (1.0 - decay) * g + decay * moment;
}
/// optax's update_moment_per_elem_norm with order 2: (1 - decay)·g² + decay·moment.
inline Array update_moment_squared(const Array& g, const Array& moment, double decay) {
  return (1.0 - decay) * (g * g) + decay * moment;
}
/// optax's bias_correction: moment / (1 - decay^count), the divisor in the moment's dtype.
inline Array bias_correction(const Array& moment, double decay, const Array& count) {
  Array correction = 1.0f - pow(scalar(static_cast<float>(decay)), count.astype(DType::f32));
  return moment / correction.astype(moment.dtype());
}
}  // namespace detail

/// Multiplies updates by a constant (optax.scale).
struct Scale {
  double factor;
  template <class P>
  EmptyState init(const P&) const {
    return {};
  }
  template <class P>
  std::pair<P, EmptyState> update(const P& updates, const EmptyState& s, const P&) const {
    return {detail::map_arrays([&](const Array& g) { return g * factor; }, updates), s};
  }
};
inline Scale scale(double factor) { return {factor}; }

/// The state of scale_by_schedule: the int32 count of updates so far.
struct ScaleByScheduleState {
  Array count;
};
/// Multiplies updates by schedule(count), count starting at 0, then increments it (optax.scale_by_schedule).
struct ScaleBySchedule {
  Schedule schedule;
  template <class P>
  ScaleByScheduleState init(const P&) const {
    return {detail::zero_count()};
  }
  template <class P>
  std::pair<P, ScaleByScheduleState> update(const P& updates, const ScaleByScheduleState& s, const P&) const {
    Array step_size = schedule(s.count);
    P out = detail::map_arrays([&](const Array& g) { return step_size.astype(g.dtype()) * g; }, updates);
    return {std::move(out), {detail::safe_increment(s.count)}};
  }
};
inline ScaleBySchedule scale_by_schedule(Schedule schedule) { return {std::move(schedule)}; }

/// scale(-lr) for a constant rate, scale_by_schedule(-lr(count)) for a schedule
/// (optax's scale_by_learning_rate with flip_sign=True: updates are to be added).
inline Scale scale_by_learning_rate(double learning_rate) { return scale(-learning_rate); }
inline ScaleBySchedule scale_by_learning_rate(Schedule learning_rate) {
  return scale_by_schedule([lr = std::move(learning_rate)](const Array& count) { return -lr(count); });
}
/// A learning rate: a number or a schedule.
template <class LR>
concept LearningRate = std::is_arithmetic_v<LR> || std::is_convertible_v<LR, Schedule>;
template <LearningRate LR>
auto learning_rate_scale(const LR& lr) {
  if constexpr (std::is_arithmetic_v<LR>) return scale_by_learning_rate(static_cast<double>(lr));
  else return scale_by_learning_rate(Schedule(lr));
}

/// The state of trace: the momentum buffer.
template <class P>
struct TraceState {
  P trace;
};
/// Momentum: trace ← g + decay·trace; updates = trace, or g + decay·trace for Nesterov (optax.trace).
struct Trace {
  double decay;
  bool nesterov = false;
  template <class P>
  TraceState<P> init(const P& params) const {
    return {detail::map_arrays([](const Array& p) { return zeros_like(p); }, params)};
  }
  template <class P>
  std::pair<P, TraceState<P>> update(const P& updates, const TraceState<P>& s, const P&) const {
    auto step = [&](const Array& g, const Array& t) { return g + decay * t; };
    P next = detail::map_arrays(step, updates, s.trace);
    P out = nesterov ? detail::map_arrays(step, updates, next) : next;
    return {std::move(out), {std::move(next)}};
  }
};
inline Trace trace(double decay, bool nesterov = false) { return {decay, nesterov}; }

/// Options of scale_by_adam (optax's defaults).
struct AdamOptions {
  double b1 = 0.9;
  double b2 = 0.999;
  double eps = 1e-8;
  double eps_root = 0.0;
  bool nesterov = false;  ///< NAdam
};
/// The state of scale_by_adam: the int32 count and the two moments.
template <class P>
struct ScaleByAdamState {
  Array count;
  P mu;
  P nu;
};
/// Adam's scaling: m̂ / (sqrt(v̂ + eps_root) + eps) with bias-corrected moments (optax.scale_by_adam).
struct ScaleByAdam {
  AdamOptions o;
  template <class P>
  ScaleByAdamState<P> init(const P& params) const {
    auto z = [](const Array& p) { return zeros_like(p); };
    return {detail::zero_count(), detail::map_arrays(z, params), detail::map_arrays(z, params)};
  }
  template <class P>
  std::pair<P, ScaleByAdamState<P>> update(const P& updates, const ScaleByAdamState<P>& s, const P&) const {
    P mu = detail::map_arrays([&](const Array& g, const Array& m) { return detail::update_moment(g, m, o.b1); }, updates, s.mu);
    P nu = detail::map_arrays([&](const Array& g, const Array& v) { return detail::update_moment_squared(g, v, o.b2); }, updates, s.nu);
    Array count = detail::safe_increment(s.count);
    P out = detail::map_arrays(
        [&](const Array& g, const Array& m, const Array& v) {
          Array m_hat = o.nesterov ? o.b1 * detail::bias_correction(m, o.b1, detail::safe_increment(count)) +
                                         (1.0 - o.b1) * detail::bias_correction(g, o.b1, count)
                                   : detail::bias_correction(m, o.b1, count);
          Array v_hat = detail::bias_correction(v, o.b2, count);
          return m_hat / (sqrt(v_hat + o.eps_root) + o.eps);
        },
        updates, mu, nu);
    return {std::move(out), {std::move(count), std::move(mu), std::move(nu)}};
  }
};
inline ScaleByAdam scale_by_adam(AdamOptions o = {}) { return {o}; }

/// Options of scale_by_rms.
struct RmsOptions {
  double decay = 0.9;
  double eps = 1e-8;
  double initial_scale = 0.0;
};
/// The state of scale_by_rms: the running mean of squared gradients.
template <class P>
struct ScaleByRmsState {
  P nu;
};
/// RMSProp's scaling: g · rsqrt(ν + eps) (optax.scale_by_rms with eps_in_sqrt, no bias correction).
struct ScaleByRms {
  RmsOptions o;
  template <class P>
  ScaleByRmsState<P> init(const P& params) const {
    return {detail::map_arrays([&](const Array& p) { return full_like(p, o.initial_scale); }, params)};
  }
  template <class P>
  std::pair<P, ScaleByRmsState<P>> update(const P& updates, const ScaleByRmsState<P>& s, const P&) const {
    P nu = detail::map_arrays([&](const Array& g, const Array& v) { return detail::update_moment_squared(g, v, o.decay); }, updates, s.nu);
    P out = detail::map_arrays([&](const Array& g, const Array& v) { return g * rsqrt(v + o.eps); }, updates, nu);
    return {std::move(out), {std::move(nu)}};
  }
};
inline ScaleByRms scale_by_rms(RmsOptions o = {}) { return {o}; }

/// Adds weight_decay·params to the updates (optax.add_decayed_weights, before the lr scaling).
struct AddDecayedWeights {
  double weight_decay;
  template <class P>
  EmptyState init(const P&) const {
    return {};
  }
  template <class P>
  std::pair<P, EmptyState> update(const P& updates, const EmptyState& s, const P& params) const {
    return {detail::map_arrays([&](const Array& g, const Array& p) { return g + weight_decay * p; }, updates, params), s};
  }
};
/// optax.add_decayed_weights(weight_decay) with no mask: every leaf decays.
inline AddDecayedWeights add_decayed_weights(double weight_decay = 0.0) { return {weight_decay}; }

/// Rescales all updates by max_norm / global_norm when the global norm exceeds max_norm, with
/// `select` rather than `maximum` as optax does (optax.clip_by_global_norm).
struct ClipByGlobalNorm {
  double max_norm;
  template <class P>
  EmptyState init(const P&) const {
    return {};
  }
  template <class P>
  std::pair<P, EmptyState> update(const P& updates, const EmptyState& s, const P&) const {
    Array norm = global_norm(updates);
    Array keep = norm < max_norm;
    P out = detail::map_arrays(
        [&](const Array& g) { return where(keep, g, (g / norm.astype(g.dtype())) * max_norm); }, updates);
    return {std::move(out), s};
  }
};
inline ClipByGlobalNorm clip_by_global_norm(double max_norm) { return {max_norm}; }

/// Which leaves a masked transformation applies to, by key path as simple_keystr writes it
/// (`layers/0/w`): true = apply.
using Mask = std::function<bool(std::string_view path)>;

/// `inner` applied to the leaves `mask` selects; the others' updates pass through unchanged
/// (optax.masked). optax hands the inner transformation placeholders without leaves for the
/// masked-out ones; here they reach it as zeros, which is the same for every transformation that
/// looks across leaves (a global norm counts nothing for them) or leaf by leaf. The inner state
/// still holds entries for them (C++ state types cannot drop fields per instance), never used.
template <class Tx>
struct Masked {
  Tx inner;
  Mask mask;
  template <class P>
  auto init(const P& params) const {
    return inner.init(params);
  }
  template <class P, class S>
  std::pair<P, S> update(const P& updates, const S& s, const P& params) const {
    auto selected = [&](const KeyPath& path) { return mask(simple_keystr(path)); };
    P masked_in = tree_map_with_path(
        [&](const KeyPath& path, const auto& g) {
          if constexpr (detail::is_array_v<decltype(g)>) return selected(path) ? g : zeros_like(g);
          else return g;
        },
        updates);
    auto [inner_updates, next] = inner.update(masked_in, s, params);
    P out = tree_map_with_path(
        [&](const KeyPath& path, const auto& g, const auto& u) {
          if constexpr (detail::is_array_v<decltype(g)>) return selected(path) ? u : g;
          else return g;
        },
        updates, inner_updates);
    return {std::move(out), std::move(next)};
  }
};
template <class Tx>
Masked<std::remove_cvref_t<Tx>> masked(Tx&& inner, Mask mask) {
  return {std::forward<Tx>(inner), std::move(mask)};
}
/// optax.add_decayed_weights(weight_decay, mask): only the leaves `mask` selects decay (biases and
/// norm scales are usually left out: `[](auto p) { return !p.ends_with("/b"); }`).
inline Masked<AddDecayedWeights> add_decayed_weights(double weight_decay, Mask mask) {
  return masked(AddDecayedWeights{weight_decay}, std::move(mask));
}

}  // namespace canopy::optim
