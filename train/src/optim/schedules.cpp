// The schedules of optax/schedules/_schedule.py and _join.py, written with Array ops on the count
// (converted to f32 first, as jnp's true division of an int32 count does).
#include "canopy/train/optim/schedules.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include <canopy/numpy.hpp>
#include <canopy/ops.hpp>

#include "canopy/train/error.hpp"

namespace canopy::optim {
namespace {

Array f32(const Array& count) { return count.astype(DType::f32); }
Array f32(double v) { return scalar(static_cast<float>(v)); }

[[noreturn]] void bad_value(const char* api, const std::string& what) { canopy::detail::raise<ValueError>(api, "", "", what); }

}  // namespace

Schedule constant_schedule(double value) {
  return [value](const Array& count) { return full_like(f32(count), value); };
}

Schedule polynomial_schedule(double init_value, double end_value, double power, std::int64_t transition_steps,
                             std::int64_t transition_begin) {
  if (transition_steps <= 0) return constant_schedule(init_value);
  return [=](const Array& count) {
    Array t = minimum(maximum(f32(count) - static_cast<float>(transition_begin), 0.0f), static_cast<float>(transition_steps));
    Array frac = 1.0f - t / static_cast<float>(transition_steps);
    return f32(init_value - end_value) * pow(frac, f32(power)) + static_cast<float>(end_value);
  };
}

Schedule linear_schedule(double init_value, double end_value, std::int64_t transition_steps, std::int64_t transition_begin) {
  return polynomial_schedule(init_value, end_value, 1.0, transition_steps, transition_begin);
}

Schedule piecewise_constant_schedule(double init_value, const std::map<std::int64_t, double>& boundaries_and_scales) {
  for (const auto& [boundary, scale] : boundaries_and_scales)
    if (scale < 0) bad_value("piecewise_constant_schedule", "scale " + std::to_string(scale) + " at step " + std::to_string(boundary) + " is negative");
  return [=](const Array& count) {
    Array c = f32(count);
    Array v = full_like(c, init_value);
    for (const auto& [boundary, scale] : boundaries_and_scales) {
      // optax's indicator max(0, sign(boundary - count)): 1 strictly before the boundary.
      Array before = maximum(sign(static_cast<float>(boundary) - c), 0.0f);
      v = v * before + (1.0f - before) * static_cast<float>(scale) * v;
    }
    return v;
  };
}

Schedule exponential_decay(double init_value, std::int64_t transition_steps, double decay_rate, ExponentialDecayOptions o) {
  // As optax: no steps or a zero rate give the constant init value; a negative begin counts from 0.
  if (transition_steps <= 0 || decay_rate == 0) return constant_schedule(init_value);
  o.transition_begin = std::max<std::int64_t>(o.transition_begin, 0);
  return [=](const Array& count) {
    Array since = f32(count) - static_cast<float>(o.transition_begin);
    Array p = since / static_cast<float>(transition_steps);
    if (o.staircase) p = floor(p);
    Array decayed = where(since <= 0.0f, f32(init_value), f32(init_value) * pow(f32(decay_rate), p));
    if (o.end_value) decayed = decay_rate < 1 ? maximum(decayed, f32(*o.end_value)) : minimum(decayed, f32(*o.end_value));
    return decayed;
  };
}

Schedule cosine_decay_schedule(double init_value, std::int64_t decay_steps, double alpha, double exponent) {
  if (decay_steps <= 0) bad_value("cosine_decay_schedule", "decay_steps must be positive, got " + std::to_string(decay_steps));
  return [=](const Array& count) {
    Array t = minimum(f32(count), static_cast<float>(decay_steps));
    Array cosine = 0.5f * (1.0f + cos(static_cast<float>(std::numbers::pi) * t / static_cast<float>(decay_steps)));
    Array decayed = (1.0f - static_cast<float>(alpha)) * pow(cosine, f32(exponent)) + static_cast<float>(alpha);
    return static_cast<float>(init_value) * decayed;
  };
}

Schedule warmup_cosine_decay_schedule(double init_value, double peak_value, std::int64_t warmup_steps,
                                      std::int64_t decay_steps, double end_value, double exponent) {
  double alpha = peak_value == 0 ? 0.0 : end_value / peak_value;
  return join_schedules({linear_schedule(init_value, peak_value, warmup_steps),
                         cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)},
                        {warmup_steps});
}

Schedule join_schedules(std::vector<Schedule> schedules, std::vector<std::int64_t> boundaries) {
  if (schedules.empty() || boundaries.size() + 1 != schedules.size())
    bad_value("join_schedules", std::to_string(schedules.size()) + " schedules need " +
                                    std::to_string(schedules.empty() ? 0 : schedules.size() - 1) + " boundaries, got " +
                                    std::to_string(boundaries.size()));
  return [schedules = std::move(schedules), boundaries = std::move(boundaries)](const Array& count) {
    Array out = schedules[0](count);
    for (std::size_t i = 0; i < boundaries.size(); ++i) {
      std::int32_t b = static_cast<std::int32_t>(boundaries[i]);
      out = where(count < b, out, schedules[i + 1](count - b));
    }
    return out;
  };
}

}  // namespace canopy::optim
