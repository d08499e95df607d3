// Learning-rate schedules in optax's shape: functions of the int32 step count returning an f32
// scalar, evaluated on the traced count inside a jitted step, so a changing rate never recompiles.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <vector>

#include <canopy/array.hpp>

namespace canopy::optim {

/// count (i32 scalar Array) -> value (f32 scalar Array).
using Schedule = std::function<Array(const Array& count)>;

/// Always `value` (optax.constant_schedule).
Schedule constant_schedule(double value);
/// From init to end over `transition_steps` steps starting at `transition_begin`, by
/// (init - end)·(1 - t/T)^power + end; a non-positive T gives init throughout (optax.polynomial_schedule).
Schedule polynomial_schedule(double init_value, double end_value, double power, std::int64_t transition_steps,
                             std::int64_t transition_begin = 0);
/// polynomial_schedule with power 1 (optax.linear_schedule).
Schedule linear_schedule(double init_value, double end_value, std::int64_t transition_steps,
                         std::int64_t transition_begin = 0);
/// init_value multiplied by each scale from its boundary step on (optax.piecewise_constant_schedule).
Schedule piecewise_constant_schedule(double init_value, const std::map<std::int64_t, double>& boundaries_and_scales);

/// Options of exponential_decay.
struct ExponentialDecayOptions {
  std::int64_t transition_begin = 0;
  bool staircase = false;                ///< decay in whole multiples of transition_steps
  std::optional<double> end_value = {};  ///< a floor (decay_rate < 1) or ceiling (> 1)
};
/// init·rate^((count - begin)/transition_steps), init before begin (optax.exponential_decay);
/// as optax, transition_steps <= 0 or a zero rate give the constant init, a negative begin is 0.
Schedule exponential_decay(double init_value, std::int64_t transition_steps, double decay_rate,
                           ExponentialDecayOptions options = {});
/// init·((1 - alpha)·(½(1 + cos(π·min(count, T)/T)))^exponent + alpha) (optax.cosine_decay_schedule);
/// ValueError unless decay_steps > 0.
Schedule cosine_decay_schedule(double init_value, std::int64_t decay_steps, double alpha = 0.0, double exponent = 1.0);
/// Linear warmup from init to peak over warmup_steps, then cosine decay to end_value until
/// decay_steps (which includes the warmup) (optax.warmup_cosine_decay_schedule).
Schedule warmup_cosine_decay_schedule(double init_value, double peak_value, std::int64_t warmup_steps,
                                      std::int64_t decay_steps, double end_value = 0.0, double exponent = 1.0);
/// schedules[0] before boundaries[0], then schedules[i + 1](count - boundaries[i]) from boundaries[i]
/// on (optax.join_schedules); ValueError unless there is one boundary fewer than schedules.
Schedule join_schedules(std::vector<Schedule> schedules, std::vector<std::int64_t> boundaries);

}  // namespace canopy::optim
